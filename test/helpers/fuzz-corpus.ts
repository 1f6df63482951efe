/**
 * The fuzz tests' corpus: requests outside testing found mishandled, sent before the random
 * ones on every run, whatever the seed, each with the answer it must get. Most are plain
 * requests (checked like the random ones, by runCorpus); the rest need a conversation (a raw
 * socket, a job that fails twice) and come as functions.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import fc from 'fast-check';
import { call, type TestApp, waitForStatus } from './app.ts';
import { smallOrder } from './e2e.ts';
import type { Outcome } from './fuzz-bodies.ts';
import type { Format, FuzzRequest } from './fuzz-requests.ts';
import { describeRequest } from './fuzz-requests.ts';
import { opsCall } from './operator.ts';

/** A request of the corpus: `outcome` is what it must be answered with. */
export function knownRequest(o: {
  readonly name: string;
  readonly method?: string;
  readonly url: string;
  readonly outcome?: Outcome;
  readonly headers?: Record<string, string>;
  readonly payload?: string;
  readonly format?: Format;
  readonly variant?: 'A' | 'B';
}): FuzzRequest {
  const req: FuzzRequest = {
    method: o.method ?? 'GET',
    url: o.url,
    headers: o.headers ?? {},
    payload: o.payload,
    // Its own address, so no failure throttle counts it with the random requests.
    peer: '127.0.0.2',
    expect: {
      route: `known: ${o.name}`,
      format: o.format ?? 'envelope',
      variant: o.variant ?? 'B',
      requestId: undefined,
      outcome: o.outcome,
      forbidden: [],
      tags: ['corpus'],
    },
  };
  return Object.assign(req, { [fc.toStringMethod]: () => describeRequest(req) });
}

/** Writes `bytes` on a loopback connection; everything the server wrote before it closed. */
function exchangeBytes(port: number, bytes: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    // The server may reset the connection after its answer.
    socket.on('error', (err) => (chunks.length === 0 ? reject(err) : undefined));
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/**
 * HEAD with a request line over 16 KB, to `path`: Node's parser refuses it (431), and the answer
 * must be a head alone, with no byte after it (a client would read them as the next answer).
 */
export async function assertHeadOverLimitHasNoBody(port: number, path: string): Promise<void> {
  const target = `${path}${path.includes('?') ? '&' : '?'}q=${'a'.repeat(17_000)}`;
  const bytes = await exchangeBytes(port, `HEAD ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete head: ${JSON.stringify(text.slice(0, 300))}`);
  assert.match(text, /^HTTP\/1\.1 4\d\d /, JSON.stringify(text.slice(0, 300)));
  assert.match(text.slice(0, end), /\r\nX-Request-Id: /i);
  assert.equal(
    text.slice(end + 4),
    '',
    `bytes after the head of a HEAD answer: ${JSON.stringify(text.slice(end + 4, end + 200))}`,
  );
}

/**
 * The webhook URLs registration must refuse (400): a Teredo address (2001::/23, IANA
 * special-purpose) and a public address on a port that is not a web port.
 */
export const REFUSED_WEBHOOK_URLS = [
  { url: 'http://[2001::1]/', what: 'special-purpose IPv6 (2001::/23)' },
  { url: 'http://8.8.8.8:22/', what: 'port 22' },
] as const;

/** Registers a webhook at `url` for the reseller of `token`: must be 400 with an error_code, never 2xx. */
export async function assertWebhookRefused(t: TestApp, token: string, url: string): Promise<void> {
  const res = await call(t, token, 'POST', 'webhooks', { url }, { 'x-envelope-variant': 'B' });
  assert.equal(res.status, 400, `${url}: ${JSON.stringify(res.body)}`);
  assert.equal(typeof res.body.error_code, 'string', url);
}

/**
 * A job that failed, retried by the operator, whose retry failed too, then retried again: the
 * second retry must not queue another job: 409 job_already_retried. Hosts drained make every create fail; they are active again after.
 */
export async function assertSecondRetryRefused(
  t: TestApp,
  ops: string,
  resellerToken: string,
): Promise<void> {
  const listed: { host_id: string; state: string }[] = (await opsCall(t, ops, 'GET', 'hosts')).body.data
    .items;
  for (const h of listed)
    assert.equal((await opsCall(t, ops, 'POST', `hosts/${h.host_id}/drain`)).status, 200);
  try {
    const B = { 'x-envelope-variant': 'B' };
    const order = await call(
      t,
      resellerToken,
      'POST',
      'service/create-order',
      smallOrder('retry-twice.example.com'),
      B,
    );
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const id = order.body.data[0].service_id;
    const created = await call(t, resellerToken, 'POST', `service/${id}/create`, undefined, B);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const failed = String(created.headers['x-job-id']);
    await waitForStatus(t, resellerToken, id, 'failed');
    const first = await opsCall(t, ops, 'POST', `jobs/${failed}/retry`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    // The retry's own job fails too (no host has room): the service is failed again.
    await waitForStatus(t, resellerToken, id, 'failed');
    const second = await opsCall(t, ops, 'POST', `jobs/${failed}/retry`);
    assert.equal(second.status, 409, JSON.stringify(second.body));
    assert.equal(second.body.error_code, 'job_already_retried');
  } finally {
    for (const h of listed)
      if (h.state === 'active') await opsCall(t, ops, 'POST', `hosts/${h.host_id}/activate`);
  }
}
