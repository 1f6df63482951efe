/**
 * What every answer must be, whatever the request: no 5xx, an X-Request-Id, the body in the
 * format of its route (the request's envelope variant with an error_code on errors; RFC 6749
 * bodies at the token endpoint; the probes' and metadata's own formats), and never another
 * reseller's data.
 */
import { ERROR_CODES } from '../../src/domain/errors.ts';
import type { FuzzRequest } from './fuzz-requests.ts';

export interface FuzzResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | number | undefined>>;
  readonly body: string;
}

/** One broken rule: `check` names the rule (stable, for grouping), `detail` says how. */
export interface Problem {
  readonly check: string;
  readonly detail: string;
}

const RFC6749_ERRORS = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  // RFC 6749 section 4.1.2.1's codes: the failure throttle's, and a 5xx (reported as such).
  'temporarily_unavailable',
  'server_error',
]);

function parseJson(text: string): { ok: true; value: any } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function checkEnvelope(req: FuzzRequest, res: FuzzResponse, problems: Problem[]): void {
  const parsed = parseJson(res.body);
  if (!parsed.ok || !isObject(parsed.value)) {
    problems.push({ check: 'not-an-envelope', detail: 'the body is not a JSON object' });
    return;
  }
  const body = parsed.value;
  const isA = 'success' in body;
  const isB = 'status' in body;
  const want = req.expect.variant;
  if ((want === 'A' && !isA) || (want === 'B' && !isB)) {
    problems.push({
      check: isA || isB ? 'wrong-envelope-variant' : 'not-an-envelope',
      detail: `wanted variant ${want}, got keys ${Object.keys(body).join(',')}`,
    });
    return;
  }
  const ok = res.status < 400;
  if (typeof body['message'] !== 'string')
    problems.push({ check: 'envelope-shape', detail: 'message is not a string' });
  if (want === 'A') {
    if (body['success'] !== (ok ? 'true' : 'false'))
      problems.push({ check: 'envelope-shape', detail: `success is ${JSON.stringify(body['success'])}` });
    if (typeof body['data'] !== 'string' || !parseJson(body['data']).ok)
      problems.push({ check: 'envelope-shape', detail: 'variant A data is not a string holding JSON' });
  } else {
    if (body['status'] !== (ok ? 'Success' : 'Error'))
      problems.push({ check: 'envelope-shape', detail: `status is ${JSON.stringify(body['status'])}` });
    if (!('data' in body)) problems.push({ check: 'envelope-shape', detail: 'no data' });
  }
  if (!ok) {
    const code = body['error_code'];
    if (typeof code !== 'string' || code === '') {
      problems.push({ check: 'no-error-code', detail: 'an error without error_code' });
    } else if (!(code in ERROR_CODES)) {
      problems.push({ check: 'unknown-error-code', detail: `${code} is not in src/domain/errors.ts` });
    } else if (ERROR_CODES[code as keyof typeof ERROR_CODES] !== res.status) {
      problems.push({ check: 'error-code-status', detail: `${code} answered with HTTP ${res.status}` });
    }
  }
}

function checkToken(res: FuzzResponse, problems: Problem[]): void {
  const parsed = parseJson(res.body);
  const body = parsed.ok ? parsed.value : undefined;
  if (res.status === 200) {
    const good =
      isObject(body) &&
      typeof body['access_token'] === 'string' &&
      body['token_type'] === 'Bearer' &&
      typeof body['expires_in'] === 'number' &&
      typeof body['scope'] === 'string';
    if (!good)
      problems.push({ check: 'token-format', detail: 'a 200 that is not an RFC 6749 token response' });
    if (!String(res.headers['cache-control'] ?? '').includes('no-store'))
      problems.push({ check: 'token-format', detail: 'a token without Cache-Control: no-store' });
    return;
  }
  const good =
    isObject(body) &&
    typeof body['error'] === 'string' &&
    RFC6749_ERRORS.has(body['error']) &&
    typeof body['error_description'] === 'string';
  if (!good) problems.push({ check: 'token-format', detail: 'an error that is not an RFC 6749 error body' });
}

function checkOwnFormat(req: FuzzRequest, res: FuzzResponse, problems: Problem[]): void {
  const parsed = parseJson(res.body);
  const body = parsed.ok ? parsed.value : undefined;
  const fail = (detail: string) => problems.push({ check: `${req.expect.format}-format`, detail });
  if (res.status !== 200) {
    fail(`HTTP ${res.status} from a route that always answers 200 here`);
    return;
  }
  switch (req.expect.format) {
    case 'metadata':
      if (
        !isObject(body) ||
        typeof body['issuer'] !== 'string' ||
        !String(body['token_endpoint']).endsWith('/oauth/token') ||
        !Array.isArray(body['grant_types_supported'])
      )
        fail('not RFC 8414 metadata');
      return;
    case 'healthz':
      if (!isObject(body) || body['status'] !== 'ok') fail('not {"status":"ok"}');
      return;
    case 'readyz':
      if (!isObject(body) || body['status'] !== 'ready') fail('not {"status":"ready"}');
      return;
    case 'metrics': {
      if (!String(res.headers['content-type']).startsWith('text/plain')) fail('not text/plain');
      // Prometheus reads the value with Go's ParseFloat: Inf and NaN in any case (prom-client writes Nan).
      const sample = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?([0-9.e+-]+|\+?inf|nan)$/i;
      const bad = res.body
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .find((l) => !sample.test(l));
      if (bad !== undefined) fail(`not Prometheus text: ${JSON.stringify(bad)}`);
      return;
    }
  }
}

/** Every rule `res` breaks as the answer to `req` (and `twin` to `req.twin`). */
export function checkResponse(req: FuzzRequest, res: FuzzResponse, twin?: FuzzResponse): Problem[] {
  const problems: Problem[] = [];
  if (res.status >= 500 || res.status < 100) {
    problems.push({ check: 'server-error', detail: `HTTP ${res.status}` });
  }
  const requestId = res.headers['x-request-id'];
  if (typeof requestId !== 'string' || requestId === '') {
    problems.push({ check: 'no-request-id', detail: 'no X-Request-Id header' });
  } else if (req.expect.requestId !== undefined && requestId !== req.expect.requestId) {
    problems.push({
      check: 'request-id-not-echoed',
      detail: `sent ${req.expect.requestId}, got ${requestId}`,
    });
  }
  if (req.twin && twin) {
    // Another reseller's object must look exactly like one that does not exist.
    const [mine, missing] = [`${res.status} ${answerCode(res)}`, `${twin.status} ${answerCode(twin)}`];
    if (mine !== missing || res.status < 300) {
      problems.push({
        check: 'cross-tenant',
        detail: `another reseller's id answered ${mine}; an id nobody has answered ${missing}`,
      });
    }
  }
  const outcome = req.expect.outcome;
  if (outcome) {
    const code = answerCode(res);
    const statusOk =
      outcome.status === '4xx' ? res.status >= 400 && res.status < 500 : res.status === outcome.status;
    // HEAD answers carry no body, so no error_code to compare.
    const codeOk = outcome.code === undefined || req.method === 'HEAD' || code === outcome.code;
    if (!statusOk || !codeOk) {
      problems.push({
        check: `rule: ${outcome.rule}`,
        detail: `wanted ${outcome.status} ${outcome.code ?? ''}, got ${res.status} ${code}`,
      });
    }
  }
  const leaked = req.expect.forbidden.find((s) => res.body.includes(s));
  if (leaked !== undefined)
    problems.push({ check: 'leak', detail: `the body holds ${JSON.stringify(leaked)}` });
  // HEAD answers have no body to check.
  if (req.method === 'HEAD') return problems;
  switch (req.expect.format) {
    case 'envelope':
      checkEnvelope(req, res, problems);
      break;
    case 'token':
      checkToken(res, problems);
      break;
    case 'any':
      break;
    default:
      checkOwnFormat(req, res, problems);
  }
  return problems;
}

/** A short name of the answer, for grouping: its error_code, RFC 6749 error or framework code. */
export function answerCode(res: FuzzResponse): string {
  const parsed = parseJson(res.body);
  if (!parsed.ok || !isObject(parsed.value)) return res.body === '' ? '(empty)' : '(not JSON)';
  const b = parsed.value;
  const code = b['error_code'] ?? b['error'] ?? b['code'];
  return typeof code === 'string' ? code : '-';
}

/** A response as a reader wants it in a failure report. */
export function describeResponse(res: FuzzResponse): string {
  const headers = Object.entries(res.headers)
    .filter(([k]) => ['content-type', 'x-request-id', 'allow', 'www-authenticate'].includes(k))
    .map(([k, v]) => `  ${k}: ${String(v)}`);
  const body = res.body.length > 400 ? `${res.body.slice(0, 400)}… (${res.body.length} chars)` : res.body;
  return [`HTTP ${res.status}`, ...headers, `  body: ${body}`].join('\n');
}
