import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { ResolvedAddress } from './lookup.ts';

/** Why an attempt got no 2xx, for the delivery's record and the metrics. */
export type FailureReason = 'status' | 'timeout' | 'network' | 'refused' | 'internal';

/** An attempt that got no 2xx: the HTTP status if one came, and a readable account. */
export class SendFailure extends Error {
  override name = 'SendFailure';
  readonly reason: FailureReason;
  readonly httpStatus: number | null;
  constructor(reason: FailureReason, message: string, httpStatus: number | null = null) {
    super(message);
    this.reason = reason;
    this.httpStatus = httpStatus;
  }
}

export interface PostRequest {
  readonly url: URL;
  /** Where to connect: the checked address, never a fresh resolution of the URL's host. */
  readonly address: ResolvedAddress;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** When the attempt is given up if no answer has come (epoch ms, real time). */
  readonly deadline: number;
  /** Aborts the attempt (the process is stopping). */
  readonly signal?: AbortSignal;
}

/** Answers every lookup with the one checked address, in both of the forms Node asks for. */
function pinnedLookup(address: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, [address]);
    else callback(null, address.address, address.family);
  };
}

const networkMessage = (err: Error & { code?: string }) =>
  err.code ? `${err.message.replace(/^.*?: /, '')} (${err.code})` : err.message;

/**
 * POSTs one webhook message and resolves with the status of the answer once its head has come
 * (the body is not read: only the status counts). The host name stays in the URL, so `Host` and
 * TLS (SNI, certificate check) use it, but the connection goes to `address`. Redirects are not
 * followed. No 2xx, or no answer by the deadline, rejects with a SendFailure.
 */
export function postWebhook(r: PostRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = r.url.protocol === 'https:' ? httpsRequest : httpRequest;
    let settled = false;
    const fail = (failure: SendFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(failure);
    };
    const req = request(r.url, {
      method: 'POST',
      headers: { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) },
      lookup: pinnedLookup(r.address),
      agent: false,
      signal: r.signal,
    });
    const seconds = Math.max(0, Math.round((r.deadline - Date.now()) / 100) / 10);
    const timer = setTimeout(
      () => fail(new SendFailure('timeout', `no answer within ${seconds} s`)),
      Math.max(0, r.deadline - Date.now()),
    );
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      res.resume();
      if (status >= 200 && status < 300) {
        settled = true;
        clearTimeout(timer);
        req.destroy();
        resolve(status);
        return;
      }
      const note = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
      fail(new SendFailure('status', `HTTP ${status}${note}`, status));
    });
    req.on('error', (err: Error & { code?: string }) => {
      if (r.signal?.aborted) fail(new SendFailure('network', 'stopped: the process is shutting down'));
      else fail(new SendFailure('network', networkMessage(err)));
    });
    req.end(r.body);
  });
}
