/** The catalogue: products with resource bounds, their plans, and OS templates. */

export const RESOURCES = ['ram', 'ip', 'cpu', 'hdd', 'backup'] as const;
export type Resource = (typeof RESOURCES)[number];

/** Units per resource, as section 2.2 of the interface document gives them. */
export const RESOURCE_UNITS: Readonly<Record<Resource, string>> = {
  ram: 'GB',
  ip: 'IP',
  cpu: 'vCore',
  hdd: 'GB',
  backup: 'GB',
};

export interface Bounds {
  readonly min: number;
  readonly max: number;
}

export type ProductConfig = Readonly<Record<Resource, Bounds>>;

export interface OsTemplateRef {
  readonly templateId: string;
  readonly name: string;
  /** No longer offered: not listed, refused for orders and reinstalls; services on it keep it. */
  readonly retired: boolean;
}

export interface Product {
  readonly id: string;
  readonly name: string;
  readonly template: string;
  readonly config: ProductConfig;
  readonly osTemplates: readonly OsTemplateRef[];
  /** Monthly traffic quota per service, GB (10^9 bytes, in and out together); null: none. */
  readonly trafficGb: number | null;
  /** Past the quota: `throttle:MBIT` or `suspend` (domain/traffic.ts); null without a quota. */
  readonly trafficOver: string | null;
  /** No longer offered to resellers (not listed, not orderable); its services keep working. */
  readonly retired: boolean;
}

export interface Plan {
  readonly id: string;
  readonly productId: string;
  readonly name: string;
  readonly cpu: number;
  readonly ram: number;
  readonly hdd: number;
  readonly price: number;
  /** No longer listed to resellers. */
  readonly retired: boolean;
}

/**
 * Product as the API shows it: bounds as numeric strings with their units (section 2.2), and
 * nothing else: the interface document fixes the product's fields, so its traffic quota shows in
 * the details of each of its services instead. Its retired OS templates are not offered, so not shown.
 */
export function productView(p: Product) {
  const config: Record<string, { min: string; max: string; unit: string }> = {};
  for (const r of RESOURCES) {
    config[r] = { min: String(p.config[r].min), max: String(p.config[r].max), unit: RESOURCE_UNITS[r] };
  }
  return {
    id: p.id,
    name: p.name,
    template: p.template,
    config,
    os_templates: p.osTemplates
      .filter((t) => !t.retired)
      .map((t) => ({ template_id: t.templateId, name: t.name })),
  };
}

export function planView(p: Plan) {
  return { uuid: p.id, name: p.name, cpu: p.cpu, ram: p.ram, hdd: p.hdd, price: p.price };
}
