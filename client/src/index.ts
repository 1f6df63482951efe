/**
 * @vrp/client: a typed client of the Virtual Server Reseller Provisioning API (v2.0.0), for
 * Node >= 20 and browsers, on the platform's fetch. See client/README.md.
 */
export { type CallOptions, type ClientOptions, createClient, type VrpClient } from './client.ts';
export { type ClientErrorCode, VrpError } from './errors.ts';
export type { components, operations, paths } from './generated/openapi.ts';
export type * from './types.ts';
export type { WaitOptions } from './wait.ts';
