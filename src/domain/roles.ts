/**
 * Operator roles and what each may do: the one table that both the operator API (on every route,
 * plugins/authenticate.ts) and the console (which links and buttons it shows) consult.
 *
 * - `admin`: everything.
 * - `support`: every read but secrets; operations on services and jobs (power, suspend,
 *   migrate, reinstall, rescue, backups, console, retry and cancel jobs...); no change to hosts,
 *   address pools, resellers or quotas.
 * - `billing`: reads (usage and the audit log among them), and the resellers' billing data (their
 *   external billing ids), which billing staff own.
 */
export const ROLES = ['admin', 'support', 'billing'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route needs: `read` (any read but a secret), `operate` (an operation on a service or a
 * job), `manage` (a change to hosts, pools, resellers, quotas), `secret` (a server's password)
 * and `bill` (a change to billing data: a reseller's external billing id).
 */
export type Permission = 'read' | 'operate' | 'manage' | 'secret' | 'bill';

const ALLOWED: Readonly<Record<Permission, readonly Role[]>> = {
  read: ['admin', 'support', 'billing'],
  operate: ['admin', 'support'],
  manage: ['admin'],
  secret: ['admin'],
  bill: ['admin', 'billing'],
};

export function isRole(value: string): value is Role {
  return ROLES.some((role) => role === value);
}

/** Whether an operator of `role` may do what `permission` names. */
export function roleAllows(role: Role, permission: Permission): boolean {
  return ALLOWED[permission].includes(role);
}

/** The roles allowed `permission`, for messages and documents. */
export function rolesAllowed(permission: Permission): readonly Role[] {
  return ALLOWED[permission];
}
