/**
 * Reseller quotas (docs/design/contract.md#quotas-and-usage): caps on the totals of a reseller's
 * services that are not terminated. The rule is pure: given the quota, the use and what a request
 * adds, the request fits, or one resource is named as the one it would exceed. The store supplies
 * the numbers inside the transaction that writes the request (store/repos/quotas.ts).
 */
import { RESOURCE_UNITS } from './catalog.ts';
import { ApiError } from './errors.ts';
import type { Amounts } from './orders.ts';

/** What a quota can cap, in the order answers list them. */
export const QUOTA_RESOURCES = ['services', 'cpu', 'ram', 'hdd', 'ip', 'backup'] as const;
export type QuotaResource = (typeof QUOTA_RESOURCES)[number];

/** The largest cap (the store keeps caps as 32-bit integers). */
export const MAX_QUOTA = 999_999_999;

/** A reseller's caps (0 to MAX_QUOTA); null: unlimited. A reseller without any quota has every cap null. */
export type Quota = Readonly<Record<QuotaResource, number | null>>;

/** Totals over a reseller's services that are not terminated (or what one request adds to them). */
export type QuotaUse = Readonly<Record<QuotaResource, number>>;

/** No cap on anything. */
export const UNLIMITED: Quota = {
  services: null,
  cpu: null,
  ram: null,
  hdd: null,
  ip: null,
  backup: null,
};

/** Whether the quota caps nothing (then the store keeps no quota at all for the reseller). */
export function isUnlimited(quota: Quota): boolean {
  return QUOTA_RESOURCES.every((r) => quota[r] === null);
}

/** What a new service adds: itself, and its amounts. */
export function orderDemand(amounts: Amounts): QuotaUse {
  return { services: 1, ...amounts };
}

/**
 * What an upgrade adds: for each resource, how far the new amount goes beyond what the service
 * already counts for (`counted`: its size, or the size of an upgrade still waiting if larger).
 * Going down adds nothing: a smaller size is not counted until its job has succeeded, so that a
 * failed upgrade can never leave the reseller above its quota.
 */
export function upgradeDemand(counted: Amounts, next: Amounts): QuotaUse {
  const more = (r: keyof Amounts) => Math.max(0, next[r] - counted[r]);
  return {
    services: 0,
    cpu: more('cpu'),
    ram: more('ram'),
    hdd: more('hdd'),
    ip: more('ip'),
    backup: more('backup'),
  };
}

/** What a service counts for while upgrades wait: per resource, the largest of its size and theirs. */
export function countedSize(current: Amounts, waiting: readonly Amounts[]): Amounts {
  const most = (r: keyof Amounts) => Math.max(current[r], ...waiting.map((w) => w[r]));
  return { cpu: most('cpu'), ram: most('ram'), hdd: most('hdd'), ip: most('ip'), backup: most('backup') };
}

/** The first resource the request would take over its cap, if any. A request adding nothing to a resource never exceeds it. */
export function exceededResource(quota: Quota, use: QuotaUse, demand: QuotaUse): QuotaResource | undefined {
  return QUOTA_RESOURCES.find((r) => {
    const cap = quota[r];
    return cap !== null && demand[r] > 0 && use[r] + demand[r] > cap;
  });
}

const UNITS: Readonly<Record<QuotaResource, string>> = {
  services: 'services',
  cpu: RESOURCE_UNITS.cpu,
  ram: RESOURCE_UNITS.ram,
  hdd: RESOURCE_UNITS.hdd,
  ip: RESOURCE_UNITS.ip,
  backup: RESOURCE_UNITS.backup,
};

/** An amount with its unit: `16 GB`, `3 services`. */
export function quotaAmount(resource: QuotaResource, n: number): string {
  return resource === 'services' && n === 1 ? '1 service' : `${n} ${UNITS[resource]}`;
}

/**
 * Refuses a request (an `order` or an `upgrade`) that would take the reseller over its quota:
 * 400 `quota_exceeded`, the message naming the resource, the quota and the use.
 */
export function checkQuota(
  quota: Quota,
  use: QuotaUse,
  demand: QuotaUse,
  request: 'order' | 'upgrade',
): void {
  const r = exceededResource(quota, use, demand);
  if (r === undefined) return;
  throw new ApiError(
    'quota_exceeded',
    `Quota exceeded for ${r}: the quota is ${quotaAmount(r, quota[r] ?? 0)}, ` +
      `${quotaAmount(r, use[r])} in use, and this ${request} needs ${quotaAmount(r, demand[r])} more`,
  );
}
