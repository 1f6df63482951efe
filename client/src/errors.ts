/**
 * Codes the client itself gives, beside the server's `error_code`s (docs/api.md) and the
 * token endpoint's RFC 6749 `error`s.
 */
export type ClientErrorCode =
  /** The request never got an answer (refused, reset, DNS, TLS): `cause` says why. */
  | 'network_error'
  /** The answer was not the JSON the API answers (a proxy's error page, say). */
  | 'invalid_response'
  /** waitForStatus: the service failed, or reached a status from which the wanted one cannot follow. */
  | 'unreachable_status'
  /** waitForStatus: the time given ran out. */
  | 'wait_timeout';

/** Everything the client throws, except an abort (the signal's reason is thrown as it is). */
export class VrpError extends Error {
  override readonly name = 'VrpError';
  /** The HTTP status of the answer; 0 when there was none (network error, waitForStatus). */
  readonly status: number;
  /**
   * The API's `error_code` (`service_not_found`, `invalid_state`, ...), the token endpoint's
   * `error` (`invalid_client`, ...), or one of ClientErrorCode.
   */
  readonly errorCode: string;
  /** The answer's `X-Request-Id`, to quote to the provider; undefined when there was no answer. */
  readonly requestId: string | undefined;
  /** waitForStatus: the service's last status seen. */
  readonly lastStatus: unknown;

  constructor(
    status: number,
    errorCode: string,
    message: string,
    options: { requestId?: string | undefined; cause?: unknown; lastStatus?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.errorCode = errorCode;
    this.requestId = options.requestId;
    this.lastStatus = options.lastStatus;
  }
}
