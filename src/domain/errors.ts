/** Every error code a client can see, with its HTTP status. One closed list, documented in the error table of docs/api.md (a test keeps the two equal). */
export const ERROR_CODES = {
  validation_failed: 400,
  out_of_bounds: 400,
  invalid_template: 400,
  template_unavailable: 400,
  invalid_state: 400,
  service_busy: 400,
  service_id_mismatch: 400,
  idempotency_key_reused: 400,
  disk_shrink_not_supported: 400,
  backup_quota_exceeded: 400,
  backups_disabled: 400,
  quota_exceeded: 400,
  weak_password: 400,
  invalid_ssh_key: 400,
  schedule_limit_reached: 400,
  webhook_limit_reached: 400,
  invalid_envelope_variant: 400,
  invalid_cursor: 400,
  invalid_host_name: 400,
  host_name_taken: 400,
  host_driver_mismatch: 400,
  invalid_host_uri: 400,
  capacity_below_use: 400,
  same_host: 400,
  host_not_active: 400,
  host_unreachable: 400,
  ip_not_of_service: 400,
  invalid_ptr: 400,
  rdns_unavailable: 400,
  invalid_network: 400,
  gateway_outside_network: 400,
  range_outside_network: 400,
  prefix_too_small: 400,
  pool_overlap: 400,
  pool_name_taken: 400,
  unknown_host: 400,
  invalid_token: 401,
  insufficient_scope: 403,
  insufficient_role: 403,
  console_origin_refused: 403,
  https_required: 403,
  service_not_found: 404,
  backup_not_found: 404,
  backup_schedule_not_found: 404,
  product_not_found: 404,
  webhook_not_found: 404,
  reseller_not_found: 404,
  job_not_found: 404,
  host_not_found: 404,
  pool_not_found: 404,
  template_not_found: 404,
  plan_not_found: 404,
  application_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  reseller_name_taken: 409,
  job_not_queued: 409,
  job_not_failed: 409,
  job_already_retried: 409,
  host_not_empty: 409,
  pool_in_use: 409,
  no_ipv6_pool: 409,
  product_in_use: 409,
  template_in_use: 409,
  invalidates_services: 409,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  rate_limited: 429,
  internal_error: 500,
  rdns_backend_failed: 502,
  store_unavailable: 503,
  console_unavailable: 503,
  shutting_down: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An error meant for the client: a stable code, its HTTP status and a readable message. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: ErrorCode;
  readonly status: number;
  /** May the message reach the client? 5xx messages never do. */
  readonly expose: boolean;
  /** Extra response headers (Retry-After, WWW-Authenticate). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Members the error envelope carries beside `error_code`, for a program to act on (409
   * `job_already_retried`: `retry_job_id`, the job the first retry queued). Each is declared in
   * the error envelope of the OpenAPI documents (http/openapi.ts).
   */
  readonly fields: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string>; fields?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.status = ERROR_CODES[code];
    this.expose = this.status < 500;
    this.headers = options.headers ?? {};
    this.fields = options.fields ?? {};
  }
}

/** What a caught value says: its message if it is an Error, else the value as text. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
