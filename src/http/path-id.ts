import { ApiError, type ErrorCode } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';

/** The answer to an id that names nothing, by the kind of object a path names. */
const NOT_FOUND = {
  service_not_found: 'Service not found',
  backup_not_found: 'Backup not found',
  backup_schedule_not_found: 'Backup schedule not found',
  product_not_found: 'Product not found',
  webhook_not_found: 'Webhook not found',
  reseller_not_found: 'Reseller not found',
  job_not_found: 'Job not found',
  plan_not_found: 'Plan not found',
  template_not_found: 'OS template not found',
} as const satisfies Partial<Record<ErrorCode, string>>;

/** The 404 code of an object a path names by its UUID. */
export type NotFoundCode = keyof typeof NOT_FOUND;

/** 404 `code`: the object the path (or a body) names does not exist, or is not the caller's. */
export function notFound(code: NotFoundCode): ApiError {
  return new ApiError(code, NOT_FOUND[code]);
}

/**
 * The id a path names, in lower case. Path ids are documented as UUIDs but their schema accepts
 * any string (`InputId`): one that is not a UUID cannot name an object, so it is answered as an
 * id that names nothing (404 `code`), not as a malformed request (400).
 */
export function pathId(id: string, code: NotFoundCode): string {
  if (!isUuid(id)) throw notFound(code);
  return id.toLowerCase();
}
