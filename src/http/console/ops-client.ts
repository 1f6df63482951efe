import { CONSOLE_SESSION_HEADER } from '../../auth/console-session-proof.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';

/** The operator API said no: its status, `error_code` and message, which the console shows. */
export class OpsRefusal extends Error {
  override name = 'OpsRefusal';
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export type Query = Readonly<Record<string, string | number | undefined>>;

/** What a state-changing call answered: its payload and the API's message for a person. */
export interface OpsAnswer<T> {
  readonly data: T;
  readonly message: string;
}

/**
 * The console's way to the operator API: requests injected into this same server (no socket),
 * with the session's operator token, so every page shows what the API answers and every form does
 * what the API does, through the API's validation, rules and audit. Paths are relative to OPS.
 */
export interface OpsClient {
  get<T>(path: string, query?: Query): Promise<T>;
  send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<OpsAnswer<T>>;
  /** A GET answered in another media type (usage as CSV): the body as text. */
  text(path: string, query: Query, accept: string): Promise<string>;
}

function urlOf(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const search = params.toString();
  return `${OPS}/${path}${search ? `?${search}` : ''}`;
}

/**
 * A success answer of the operator API: `T` is what the caller knows the route's 200 schema to
 * be, which the API's serializer held the answer to.
 */
interface Envelope<T> {
  readonly data: T;
  readonly message?: string;
}

function refusalOf(status: number, body: string): OpsRefusal {
  let envelope: unknown;
  try {
    envelope = JSON.parse(body);
  } catch {
    // Not an envelope (never expected): the status says enough.
  }
  const fields = typeof envelope === 'object' && envelope !== null ? envelope : {};
  const code = 'error_code' in fields ? fields.error_code : undefined;
  const message = 'message' in fields ? fields.message : undefined;
  return new OpsRefusal(
    status,
    typeof code === 'string' ? code : 'internal_error',
    (typeof message === 'string' && message) || `HTTP ${status}`,
  );
}

/**
 * `from` is the browser's request: its address becomes the injected request's, and `session`
 * the proof of the console session (auth/console-session-proof.ts), so the audit log names
 * where and through which session the operator acted.
 */
export function opsClient(
  app: App,
  token: string,
  from: { readonly requestId: string; readonly address: string; readonly session: string },
): OpsClient {
  const headers = {
    authorization: `Bearer ${token}`,
    'x-request-id': from.requestId,
    [CONSOLE_SESSION_HEADER]: from.session,
  };
  async function call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    accept?: string,
  ) {
    const answer = await app.inject({
      method,
      url,
      remoteAddress: from.address,
      headers: {
        ...headers,
        ...(accept ? { accept } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    if (answer.statusCode >= 400) throw refusalOf(answer.statusCode, answer.body);
    return answer;
  }
  return {
    async get<T>(path: string, query?: Query) {
      const answer = await call('GET', urlOf(path, query));
      return answer.json<Envelope<T>>().data;
    },
    async send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown) {
      const answer = await call(method, urlOf(path), body);
      const envelope = answer.json<Envelope<T>>();
      return { data: envelope.data, message: envelope.message ?? '' };
    },
    async text(path, query, accept) {
      return (await call('GET', urlOf(path, query), undefined, accept)).body;
    },
  };
}
