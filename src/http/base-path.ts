/** The fixed prefix of every route (CONTRACT.md section 1). */
export const BASE = '/vps_reseller_provider/public';
export const API = `${BASE}/api/v2`;
/** The operator API's prefix (CONTRACT.md section 11). */
export const OPS = '/vps_reseller_provider/operator/v1';

/** The operator console's pages (CONTRACT.md section 12), beside the operator API. */
export const CONSOLE = '/vps_reseller_provider/console';
