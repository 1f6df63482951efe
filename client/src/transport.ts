/**
 * HTTP for the client: the bearer token (client credentials, refreshed before it expires and
 * once on a 401), the variant B envelope, Retry-After on a 429 (once), and every failure as
 * a VrpError.
 */
import { VrpError } from './errors.ts';

export interface TransportOptions {
  /** `{base_url}`: `https://HOST/vps_reseller_provider/public`. */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The fetch to use (default: the platform's). */
  fetch?: typeof fetch | undefined;
  /** The client's clock in epoch milliseconds (default Date.now), for token expiry. */
  now?: (() => number) | undefined;
  /** The longest Retry-After (seconds) the client waits out before retrying a 429 once (default 60). */
  maxRetryAfterSeconds?: number | undefined;
}

export interface ApiRequest {
  method: 'GET' | 'POST';
  /** After `{base_url}/api/v2/`. */
  path: string;
  query?: Record<string, string | number | undefined> | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  signal?: AbortSignal | undefined;
}

export interface ApiAnswer<T> {
  data: T;
  message: string;
  headers: Headers;
}

interface Token {
  value: string;
  /** When to stop using it (client clock): a little before it expires. */
  refreshAt: number;
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function createTransport(options: TransportOptions) {
  const base = options.baseUrl.replace(/\/+$/, '');
  // Looked up at each call, so that a fetch replaced later (tests, polyfills) is used.
  const doFetch: typeof fetch = (input, init) => (options.fetch ?? globalThis.fetch)(input, init);
  const now = options.now ?? Date.now;
  const maxRetryAfter = options.maxRetryAfterSeconds ?? 60;
  let token: Token | undefined;
  let pending: Promise<Token> | undefined;

  /** One fetch, with network failures as VrpError (an abort stays the signal's reason). */
  async function send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await doFetch(url, init);
    } catch (err) {
      if (init.signal?.aborted) throw init.signal.reason;
      // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error...) is its cause.
      const inner = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
      const why = (err instanceof Error ? err.message : String(err)) + inner;
      throw new VrpError(0, 'network_error', `${init.method ?? 'GET'} ${url} failed: ${why}`, { cause: err });
    }
  }

  /** Sends, and on a 429 waits out its Retry-After and sends once more. */
  async function sendWithRetry(url: string, init: () => RequestInit): Promise<Response> {
    const first = await send(url, init());
    if (first.status !== 429) return first;
    const seconds = retryAfterSeconds(first.headers.get('retry-after'));
    if (seconds === undefined || seconds > maxRetryAfter) return first;
    await first.body?.cancel();
    await delay(seconds * 1000, init().signal ?? undefined);
    return send(url, init());
  }

  /** The answer's body: its text and, when it is JSON, its value (undefined when it is not). */
  async function readBody(res: Response): Promise<{ text: string; json: unknown }> {
    const text = await res.text();
    try {
      return { text, json: JSON.parse(text) };
    } catch {
      return { text, json: undefined };
    }
  }

  /** Not abortable: callers share it, and one caller's abort must not fail the others' calls. */
  async function requestToken(): Promise<Token> {
    // client_secret_post as a form (RFC 6749 section 2.3.1): no Basic encoding needed in browsers.
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: options.clientId,
      client_secret: options.clientSecret,
    });
    const asked = now();
    const res = await sendWithRetry(`${base}/oauth/token`, () => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
    }));
    const { text, json } = await readBody(res);
    if (!res.ok) throw answerError(res, 'POST', text, json);
    const body = isObject(json) ? json : undefined;
    const value = body?.['access_token'];
    const expiresIn = body?.['expires_in'];
    if (typeof value !== 'string' || typeof expiresIn !== 'number') {
      throw new VrpError(res.status, 'invalid_response', 'The token endpoint answered without a token', {
        requestId: requestIdOf(res),
        responseText: excerpt(text),
      });
    }
    // Renew a tenth of the lifetime (at most a minute) early, so that no request carries a
    // token that expires on its way; measured from when it was asked for.
    const margin = Math.min(60, expiresIn / 10);
    return { value, refreshAt: asked + (expiresIn - margin) * 1000 };
  }

  /** The current token, asking for one (once, whoever asks meanwhile) when there is none or it is due. */
  async function currentToken(): Promise<Token> {
    if (token && now() < token.refreshAt) return token;
    pending ??= requestToken().then(
      (t) => {
        token = t;
        pending = undefined;
        return t;
      },
      (err) => {
        pending = undefined;
        throw err;
      },
    );
    return pending;
  }

  /** Calls `{base_url}/api/v2/{path}` and answers the variant B envelope's data. */
  async function call<T>(req: ApiRequest): Promise<ApiAnswer<T>> {
    const url = new URL(`${base}/api/v2/${req.path}`);
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    let used = await currentToken();
    const init = (): RequestInit => ({
      method: req.method,
      headers: {
        accept: 'application/json',
        authorization: `Bearer ${used.value}`,
        'x-envelope-variant': 'B',
        ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...req.headers,
      },
      body: req.body === undefined ? null : JSON.stringify(req.body),
      signal: req.signal ?? null,
    });
    let res = await sendWithRetry(url.href, init);
    if (res.status === 401) {
      // Expired early, revoked, or the server's clock differs: one new token, one retry. A 401
      // means the request was not acted on, so sending it again is safe.
      await res.body?.cancel();
      if (token === used) token = undefined;
      used = await currentToken();
      res = await sendWithRetry(url.href, init);
    }
    const { text, json } = await readBody(res);
    if (!res.ok) throw answerError(res, req.method, text, json);
    if (!isObject(json) || json['status'] !== 'Success') {
      throw new VrpError(
        res.status,
        'invalid_response',
        `Expected the API's envelope from ${req.method} ${url.pathname}, got ${res.status} ${res.headers.get('content-type') ?? 'without a content type'}`,
        { requestId: requestIdOf(res), responseText: excerpt(text) },
      );
    }
    return { data: json['data'] as T, message: String(json['message'] ?? ''), headers: res.headers };
  }

  return { call };
}

export type Transport = ReturnType<typeof createTransport>;

/** The most of an answer's body that a VrpError carries (`responseText`), in characters. */
const RESPONSE_TEXT_LIMIT = 2000;
/** The most of a server's own words that a VrpError's message quotes, in characters. */
const MESSAGE_LIMIT = 300;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The start of a body, at most `limit` characters (an ellipsis marks a cut). */
function excerpt(text: string, limit = RESPONSE_TEXT_LIMIT): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

/**
 * A 4xx or 5xx answer as a VrpError: the API's error envelope (either variant) and the token
 * endpoint's RFC 6749 body keep their code and message; any other answer (a wrong base URL's
 * 404, a proxy's 502 page) is `http_error` with the server's own words in the message.
 */
function answerError(res: Response, method: string, text: string, json: unknown): VrpError {
  const requestId = requestIdOf(res);
  const responseText = excerpt(text);
  if (isObject(json)) {
    const isEnvelope = json['status'] === 'Error' || json['success'] === 'false';
    if (isEnvelope && typeof json['error_code'] === 'string') {
      return new VrpError(res.status, json['error_code'], String(json['message'] ?? ''), {
        requestId,
        responseText,
      });
    }
    // RFC 6749 codes are snake_case (`invalid_client`); a framework's `"error": "Not Found"` is not one.
    if (typeof json['error'] === 'string' && /^[a-z][a-z0-9_]*$/.test(json['error'])) {
      const description = json['error_description'];
      return new VrpError(
        res.status,
        json['error'],
        typeof description === 'string' ? description : json['error'],
        {
          requestId,
          responseText,
        },
      );
    }
  }
  const path = res.url ? new URL(res.url).pathname : 'the server';
  const words = serverWords(text, json, res.headers.get('content-type'));
  const status = `${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
  return new VrpError(
    res.status,
    'http_error',
    `${method} ${path} answered ${status}${words ? `: ${excerpt(words, MESSAGE_LIMIT)}` : ''}`,
    { requestId, responseText },
  );
}

/** What a body says, readably: a JSON `message` (or `error`), an HTML page's text, or the text itself. */
function serverWords(text: string, json: unknown, contentType: string | null): string {
  if (isObject(json)) {
    for (const key of ['message', 'error_description', 'error', 'detail', 'title']) {
      const value = json[key];
      if (typeof value === 'string' && value.trim() !== '') return value.trim();
    }
  }
  const readable = /html/i.test(contentType ?? '')
    ? text.replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<[^>]*>/g, ' ')
    : text;
  return readable.replace(/\s+/g, ' ').trim();
}

function requestIdOf(res: Response): string | undefined {
  return res.headers.get('x-request-id') ?? undefined;
}

/** Retry-After in seconds (RFC 9110: delay-seconds or an HTTP date); undefined if unusable. */
function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
