import { type Product, RESOURCE_UNITS, RESOURCES, type Resource } from './catalog.ts';
import { ApiError } from './errors.ts';
import { isHostname } from './hostname.ts';

export type Amounts = Readonly<Record<Resource, number>>;

/**
 * Every amount within the product's bounds (inclusive). `names` maps each resource to the
 * field the client sent (lower-case in orders, upper-case in upgrades), so messages name it.
 */
export function checkBounds(
  product: Product,
  amounts: Amounts,
  names: Readonly<Record<Resource, string>>,
): void {
  for (const r of RESOURCES) {
    const { min, max } = product.config[r];
    const v = amounts[r];
    if (v < min || v > max) {
      throw new ApiError(
        'out_of_bounds',
        `${names[r]} must be between ${min} and ${max} ${RESOURCE_UNITS[r]} for product "${product.name}", got ${v}`,
      );
    }
  }
}

const ORDER_FIELD_NAMES: Readonly<Record<Resource, string>> = {
  ram: 'ram',
  ip: 'ip',
  cpu: 'cpu',
  hdd: 'hdd',
  backup: 'backup',
};

export const UPGRADE_FIELD_NAMES: Readonly<Record<Resource, string>> = {
  ram: 'RAM',
  ip: 'IP',
  cpu: 'CPU',
  hdd: 'HDD',
  backup: 'BACKUP',
};

/**
 * Disks only grow (docs/design/contract.md#upgrades): whether going from `fromGb` to `toGb` would
 * shrink one.
 */
export function shrinksDisk(fromGb: number, toGb: number): boolean {
  return toGb < fromGb;
}

/**
 * `templateId` names one of the product's OS templates still offered (400 `invalid_template`:
 * a retired one is not) that the
 * provider can create VMs from (400 `template_unavailable`); returns it normalised (lower case).
 * Orders and reinstalls ask the same.
 */
export function checkTemplate(
  product: Product,
  templateId: string,
  unavailable: ReadonlySet<string>,
): string {
  const template = templateId.toLowerCase();
  const ref = product.osTemplates.find((t) => t.templateId === template && !t.retired);
  if (!ref) {
    throw new ApiError(
      'invalid_template',
      `template_id ${templateId} is not an OS template of product "${product.name}"`,
    );
  }
  if (unavailable.has(template)) {
    throw new ApiError(
      'template_unavailable',
      `OS template "${ref.name}" cannot be provisioned: the provider has no image for it yet; choose another template`,
    );
  }
  return template;
}

/**
 * Validates an order against its product; returns the normalised domain name. `unavailable`:
 * the templates the provider cannot create VMs from (no image on the hosts), refused now
 * rather than failing at create.
 */
export function checkOrder(
  product: Product,
  order: { template_id: string; domain_name: string } & Amounts,
  unavailable: ReadonlySet<string>,
): string {
  checkTemplate(product, order.template_id, unavailable);
  const domain = order.domain_name.toLowerCase();
  if (!isHostname(domain)) {
    throw new ApiError(
      'validation_failed',
      'domain_name must be a host name (RFC 1123): labels of letters, digits and hyphens, at most 253 characters',
    );
  }
  checkBounds(product, order, ORDER_FIELD_NAMES);
  return domain;
}
