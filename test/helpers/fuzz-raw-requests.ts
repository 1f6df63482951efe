/**
 * Fuzz requests as bytes on a socket: the requests of fuzz-requests.ts written as they are,
 * or twisted in ways only Node's HTTP parser sees (raw bytes in the target, an oversized
 * head, malformed framing). A twisted request no longer reaches its route, so it must be
 * answered like any bad request: in the default envelope (B), with an X-Request-Id.
 */
import fc from 'fast-check';
import type { FuzzRequest } from './fuzz-requests.ts';

export interface RawFuzzRequest extends FuzzRequest {
  /** Request line and headers, without the final blank line. */
  readonly head: Buffer;
  readonly body: Buffer;
}

/** Twists that keep the request on its route. */
const KEEPS_ROUTE = ['as-is', 'as-is', 'as-is', 'absolute-form', 'http-1.0'] as const;
/** Twists the request line or framing so that Node or the router refuses it. */
const BREAKS = [
  'raw-byte-ff',
  'control-char',
  'space-in-target',
  'no-leading-slash',
  'asterisk',
  'double-slash',
  'long-target',
  'huge-header',
  'bad-header-name',
  'two-content-lengths',
  'bad-chunk',
] as const;
type Twist = (typeof KEEPS_ROUTE)[number] | (typeof BREAKS)[number];

function build(req: FuzzRequest, twist: Twist): RawFuzzRequest {
  // Characters beyond ASCII go percent-encoded, as app.inject sends them: raw, Node's parser
  // refuses the request line (that is the raw-byte twists' case, not the route's).
  let target: Buffer = Buffer.from(
    req.url.replace(/[\u{7f}-\u{10ffff}]/gu, (c) => encodeURIComponent(c.toWellFormed())),
    'utf8',
  );
  let version = 'HTTP/1.1';
  // Node's parser refuses a target with raw bytes outside visible ASCII (a path segment such as
  // `ü` as it is), whatever the twist.
  const breaks = (BREAKS as readonly string[]).includes(twist) || /[^\x21-\x7e]/.test(req.url);
  // A refused request has no application to take a variant from.
  const headers: [string, string][] = Object.entries(req.headers).filter(
    ([k]) => !breaks || (k !== 'authorization' && k !== 'x-envelope-variant' && k !== 'x-request-id'),
  );
  const body = Buffer.from(req.payload ?? '', 'utf8');
  const at = req.url.lastIndexOf('/') + 1;
  const splice = (bytes: Buffer) =>
    Buffer.concat([Buffer.from(req.url.slice(0, at), 'utf8'), bytes, Buffer.from(req.url.slice(at), 'utf8')]);
  let framing: [string, string][] = body.length > 0 ? [['content-length', String(body.length)]] : [];
  let rawBody = body;
  switch (twist) {
    case 'absolute-form':
      target = Buffer.from(`http://127.0.0.1${req.url}`, 'utf8');
      break;
    case 'http-1.0':
      version = 'HTTP/1.0';
      break;
    case 'raw-byte-ff':
      target = splice(Buffer.from([0xff, 0xfe]));
      break;
    case 'control-char':
      target = splice(Buffer.from([0x01]));
      break;
    case 'space-in-target':
      target = splice(Buffer.from('a b'));
      break;
    case 'no-leading-slash':
      target = Buffer.from(req.url.replace(/^\/+/, ''), 'utf8');
      break;
    case 'asterisk':
      target = Buffer.from('*');
      break;
    case 'double-slash':
      target = Buffer.from(`//${req.url}`, 'utf8');
      break;
    case 'long-target':
      target = Buffer.from(`${req.url}${req.url.includes('?') ? '&' : '?'}q=${'a'.repeat(20_000)}`, 'utf8');
      break;
    case 'huge-header':
      headers.push(['x-pad', 'a'.repeat(20_000)]);
      break;
    case 'bad-header-name':
      headers.push(['bad header', 'x']);
      break;
    case 'two-content-lengths':
      framing = [
        ['content-length', String(body.length)],
        ['content-length', String(body.length + 1)],
      ];
      break;
    case 'bad-chunk':
      framing = [['transfer-encoding', 'chunked']];
      rawBody = Buffer.from('zz\r\nhello\r\n0\r\n\r\n');
      break;
  }
  const lines = [['host', '127.0.0.1'], ['connection', 'close'], ...headers, ...framing].map(
    ([k, v]) => `${k}: ${v}`,
  );
  const head = Buffer.concat([
    Buffer.from(`${req.method} `),
    target,
    Buffer.from(` ${version}\r\n${lines.join('\r\n')}`, 'utf8'),
  ]);
  const expect = breaks
    ? {
        ...req.expect,
        route: `raw ${twist}`,
        // A route that reads no body (a GET of the document, the probes) may answer before
        // Node's parser meets the broken chunk: then its own format, else the parser's envelope.
        format:
          twist === 'bad-chunk' && req.expect.format !== 'envelope'
            ? ('any' as const)
            : ('envelope' as const),
        variant: 'B' as const,
        requestId: undefined,
        outcome: undefined,
      }
    : req.expect;
  const raw: RawFuzzRequest = {
    ...req,
    headers: Object.fromEntries(headers),
    expect: { ...expect, tags: [...expect.tags, `twist:${twist}`] },
    // Tenancy is compared through app.inject, where the twin is sent the same way.
    twin: undefined,
    head,
    body: rawBody,
  };
  return Object.assign(raw, {
    [fc.toStringMethod]: () =>
      `${JSON.stringify(head.toString('latin1').slice(0, 600))} [${raw.expect.tags.join(' ')}]`,
  });
}

export function rawRequestArb(requests: fc.Arbitrary<FuzzRequest>): fc.Arbitrary<RawFuzzRequest> {
  return fc
    .tuple(
      requests,
      fc.oneof(
        { weight: 2, arbitrary: fc.constantFrom(...KEEPS_ROUTE) },
        { weight: 1, arbitrary: fc.constantFrom(...BREAKS) },
      ),
    )
    .map(([req, twist]) => build(req, twist));
}
