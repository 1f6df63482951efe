/** The fixed prefix of every route (CONTRACT.md section 1). */
export const BASE = '/vps_reseller_provider/public';
export const API = `${BASE}/api/v2`;
