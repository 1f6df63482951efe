/**
 * Codes the client itself gives, beside the server's `error_code`s (docs/api.md) and the
 * token endpoint's RFC 6749 `error`s.
 */
export type ClientErrorCode =
  /** The request never got an answer (refused, reset, DNS, TLS): `cause` says why. */
  | 'network_error'
  /**
   * An error status (4xx, 5xx) whose answer is not the API's: a wrong base URL's 404, a
   * proxy's 502 page. `status` is the answer's; the message quotes the server's own words and
   * `responseText` holds the start of the body.
   */
  | 'http_error'
  /** A success status (2xx) whose answer is not what the API answers (not JSON, no envelope, no token). */
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
  /**
   * The start of the answer's body (at most 2000 characters), as the server sent it; undefined
   * when there was no answer.
   */
  readonly responseText: string | undefined;

  constructor(
    status: number,
    errorCode: string,
    message: string,
    options: {
      requestId?: string | undefined;
      cause?: unknown;
      lastStatus?: unknown;
      responseText?: string | undefined;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.errorCode = errorCode;
    this.requestId = options.requestId;
    this.lastStatus = options.lastStatus;
    this.responseText = options.responseText;
  }
}
