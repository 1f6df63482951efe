/** The fixed prefix of every route (docs/design/contract.md#addresses). */
export const BASE = '/vps_reseller_provider/public';
export const API = `${BASE}/api/v2`;
/** The operator API's prefix (docs/design/contract.md#operator-api). */
export const OPS = '/vps_reseller_provider/operator/v1';

/**
 * The operator console's pages (docs/design/contract.md#operator-console), beside the operator API.
 */
export const CONSOLE = '/vps_reseller_provider/console';

/**
 * The console of a service in the browser: the page a one-time link opens, its files and its
 * WebSockets (a web page for a customer, not part of the API the OpenAPI document describes).
 */
export const SERVICE_CONSOLE = `${BASE}/service-console`;
