/**
 * Why a service is `failed`, as its status and details show it and `service.status_changed`
 * events to `failed` carry it: a stable code and a text for a person. `vm_missing`: the
 * power-state reconciler (or the check at a job's start) found the server gone from its host;
 * `create_failed`: its create job failed for good (the text is the job's error).
 */
export const SERVICE_ERROR_CODES = ['vm_missing', 'create_failed'] as const;
export type ServiceErrorCode = (typeof SERVICE_ERROR_CODES)[number];

export interface ServiceError {
  readonly code: ServiceErrorCode;
  readonly message: string;
}

export function isServiceErrorCode(value: string): value is ServiceErrorCode {
  return SERVICE_ERROR_CODES.some((code) => code === value);
}
