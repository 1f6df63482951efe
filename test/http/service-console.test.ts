import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setOperatorEnabledByName } from '../../src/auth/operators.ts';
import { SERVICE_CONSOLE } from '../../src/http/base-path.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { pruneBatch } from '../../src/store/repos/retention.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const HOUR = 3600_000;

/** What a WebSocket upgrade got: the HTTP status of a refusal, or 101 with no byte read. */
function upgrade(
  origin: string,
  kind: string,
  cookie?: string,
  pageOrigin?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${origin}${SERVICE_CONSOLE}/ws/${kind}`, {
      // A connection of its own each time: the server ends a refused upgrade's connection.
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': Buffer.alloc(16, 7).toString('base64'),
        ...(cookie && { cookie }),
        ...(pageOrigin && { origin: pageOrigin }),
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101, body: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A console connection as the page's script makes it: its output as text, waits on it, its close. */
function connect(origin: string, cookie: string) {
  const ws = new WebSocket(`${origin.replace('http', 'ws')}${SERVICE_CONSOLE}/ws/serial`, {
    headers: { cookie },
  } as never);
  ws.binaryType = 'arraybuffer';
  let output = '';
  const waiters: (() => void)[] = [];
  ws.addEventListener('message', (e) => {
    output += Buffer.from(e.data as ArrayBuffer).toString('utf8');
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason })),
  );
  const opened = new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve());
    ws.addEventListener('error', () => reject(new Error('the WebSocket did not open')));
  });
  return {
    opened,
    closed,
    output: () => output,
    send: (text: string) => ws.send(new TextEncoder().encode(text)),
    /** Waits until the output (from `from` on) contains `text`; its end offset. */
    async waitFor(text: string, from = 0): Promise<number> {
      while (!output.includes(text, from)) {
        const more = new Promise<void>((resolve) => waiters.push(resolve));
        const end = await Promise.race([more.then(() => false), closed.then(() => true)]);
        if (end && !output.includes(text, from))
          throw new Error(`closed before ${JSON.stringify(text)}: ${output}`);
      }
      return output.indexOf(text, from) + text.length;
    },
    close: () => ws.close(),
  };
}

/** `closed`, or a failure once `ms` have passed without it (a console left open). */
function closedWithin<T>(closed: Promise<T>, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the console was still open after ${ms} ms`)), ms);
  });
  return Promise.race([closed, late]).finally(() => clearTimeout(timer));
}

for (const store of testStores()) {
  describe(`service console in the browser (${store})`, () => {
    let t: TestApp;
    let token: string;
    let origin: string;
    const clock = createManualClock();
    /** Moves the server's clock on; the access token (an hour long) is renewed. */
    async function advance(ms: number): Promise<void> {
      clock.advance(ms);
      token = await t.token();
    }

    before(async () => {
      t = await createTestApp({}, { worker: true, store, clock });
      token = await t.token();
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    });
    after(() => t.close());

    async function link(id: string, as = token): Promise<{ path: string; expiresAt: string }> {
      const res = await call(t, as, 'POST', `service/${id}/console`, undefined, {
        'x-envelope-variant': 'B',
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const url = new URL(res.body.data.url);
      assert.match(url.pathname, new RegExp(`^${SERVICE_CONSOLE}/[A-Za-z0-9_-]{43}$`));
      return { path: url.pathname, expiresAt: res.body.data.expires_at };
    }
    /** Opens a link as a browser does; its status, page and session cookie. */
    async function open(path: string) {
      const res = await t.app.inject({ method: 'GET', url: path });
      const setCookie = [res.headers['set-cookie'] ?? []]
        .flat()
        .find((c) => c.startsWith('vrp_service_console='));
      return { status: res.statusCode, body: res.body, headers: res.headers, setCookie };
    }
    const cookieOf = (setCookie: string | undefined) => (setCookie ?? '').split(';')[0]!;

    test('a link opens once, within 60 s; the page it opens sets the session cookie', async () => {
      const id = await orderRunning(t, token, 'once.example.com');
      const { path, expiresAt } = await link(id);
      assert.equal(new Date(expiresAt).getTime(), clock.now() + 60_000);
      const first = await open(path);
      assert.equal(first.status, 200);
      assert.match(String(first.headers['content-type']), /^text\/html/);
      assert.match(first.body, /once\.example\.com/);
      assert.match(String(first.headers['content-security-policy']), /connect-src 'self'/);
      assert.match(String(first.headers['content-security-policy']), /script-src 'self'/);
      assert.match(first.setCookie ?? '', /HttpOnly/);
      assert.match(first.setCookie ?? '', /SameSite=Strict/);
      assert.match(first.setCookie ?? '', new RegExp(`Path=${SERVICE_CONSOLE}/`));
      assert.doesNotMatch(first.setCookie ?? '', /Secure/);

      const again = await open(path);
      assert.equal(again.status, 403);
      assert.match(again.body, /already used or has expired/);
      assert.equal(again.setCookie, undefined);

      const late = await link(id);
      await advance(60_000);
      const expired = await open(late.path);
      assert.equal(expired.status, 403);
      assert.match(expired.body, /already used or has expired/);

      const unknown = await open(`${SERVICE_CONSOLE}/${'A'.repeat(43)}`);
      assert.equal(unknown.status, 403);
      assert.match(String(unknown.headers['content-security-policy']), /default-src 'none'/);

      const audit = await t.ctx.store.db
        .selectFrom('audit_log')
        .select(['action', 'service_id'])
        .where('action', '=', 'service.console')
        .execute();
      assert.equal(audit.filter((a) => a.service_id === id).length, 2);
    });

    test('the pruner removes a link once the longest session it could open is over', async () => {
      const id = await orderRunning(t, token, 'prune.example.com');
      await open((await link(id)).path);
      const links = () =>
        t.ctx.store.db
          .selectFrom('service_console_links')
          .select('id')
          .where('service_id', '=', id)
          .execute();
      assert.equal((await links()).length, 1);
      const max = t.ctx.config.serviceConsoleMaxMs;
      // Still within a session's reach of the link's opening time: kept.
      await pruneBatch(t.ctx.store.db, 'serviceConsoleLinks', clock.now() - max, 100);
      assert.equal((await links()).length, 1);
      await advance(60_000 + max);
      assert.ok((await pruneBatch(t.ctx.store.db, 'serviceConsoleLinks', clock.now() - max, 100)) >= 1);
      assert.deepEqual(await links(), []);
    });

    test('the page’s files are served by the process, with their types and a long cache', async () => {
      const id = await orderRunning(t, token, 'assets.example.com');
      const page = await open((await link(id)).path);
      const script = /<script type="module" src="([^"]+)"/.exec(page.body)?.[1];
      assert.ok(script, page.body);
      const base = script.slice(0, script.lastIndexOf('/'));
      for (const [name, type] of [
        ['service-console.js', 'text/javascript'],
        ['xterm.mjs', 'text/javascript'],
        ['addon-fit.mjs', 'text/javascript'],
        ['xterm.css', 'text/css'],
        ['novnc/core/rfb.js', 'text/javascript'],
        ['novnc/vendor/pako/lib/zlib/inflate.js', 'text/javascript'],
      ] as const) {
        const res = await t.app.inject({ method: 'GET', url: `${base}/${name}` });
        assert.equal(res.statusCode, 200, name);
        assert.match(String(res.headers['content-type']), new RegExp(`^${type}`), name);
        assert.match(String(res.headers['cache-control']), /max-age=31536000/, name);
      }
      const missing = await t.app.inject({ method: 'GET', url: `${base}/package.json` });
      assert.equal(missing.statusCode, 404);
      const outside = await t.app.inject({ method: 'GET', url: `${base}/novnc/../../package.json` });
      assert.notEqual(outside.statusCode, 200);
      const stale = await t.app.inject({ method: 'GET', url: `${SERVICE_CONSOLE}/assets/old/xterm.mjs` });
      assert.equal(stale.statusCode, 404);
    });

    test('the WebSocket refuses a missing, wrong or ended session before the upgrade', async () => {
      const id = await orderRunning(t, token, 'refuse.example.com');
      assert.equal((await upgrade(origin, 'serial')).status, 401);
      assert.equal((await upgrade(origin, 'serial', `vrp_service_console=${'B'.repeat(43)}`)).status, 401);
      assert.equal((await upgrade(origin, 'serial', 'vrp_service_console=x')).status, 401);
      const { setCookie } = await open((await link(id)).path);
      // The simulated server has no graphical console: refused before the upgrade too.
      assert.equal((await upgrade(origin, 'vnc', cookieOf(setCookie))).status, 404);
      // A page of another site cannot drive the console with the customer's cookie; the
      // console's own page can.
      const foreign = await upgrade(origin, 'serial', cookieOf(setCookie), 'https://evil.example');
      assert.equal(foreign.status, 403);
      assert.match(foreign.body, /console_origin_refused/);
      assert.equal((await upgrade(origin, 'serial', cookieOf(setCookie), origin)).status, 101);
      // An Origin that is not even a URL is another site's too.
      assert.equal((await upgrade(origin, 'serial', cookieOf(setCookie), 'null')).status, 403);
      await advance(HOUR);
      const ended = await upgrade(origin, 'serial', cookieOf(setCookie));
      assert.equal(ended.status, 401);
      assert.match(ended.body, /invalid_token/);
    });

    test('a session shows the login prompt and answers what is typed; it ends at session_until', async () => {
      const id = await orderRunning(t, token, 'shell.example.com');
      const details = await call(t, token, 'GET', `service/${id}/details`, undefined, {
        'x-envelope-variant': 'B',
      });
      const password = details.body.data.password as string;
      const { setCookie } = await open((await link(id)).path);
      const c = connect(origin, cookieOf(setCookie));
      await c.opened;
      let at = await c.waitFor('shell.example.com login: ');
      c.send('root\r');
      at = await c.waitFor('Password: ', at);
      c.send(`${password}\r`);
      at = await c.waitFor('root@shell.example.com:~# ', at);
      assert.ok(!c.output().includes(password), 'the password is not echoed');
      c.send('hostname\r');
      at = await c.waitFor('shell.example.com\r\nroot@shell.example.com:~# ', at);
      c.send('echo hello there\r');
      await c.waitFor('hello there\r\n', at);

      await advance(HOUR);
      const closed = await c.closed;
      assert.equal(closed.code, 4001);
      assert.match(closed.reason, /session has ended/);
    });

    test('suspending the service closes its console; a suspended service gets no link', async () => {
      const id = await orderRunning(t, token, 'suspend.example.com');
      const { setCookie } = await open((await link(id)).path);
      // A link asked for while it ran, opened once it is suspended: no console.
      const unopened = await link(id);
      const c = connect(origin, cookieOf(setCookie));
      await c.waitFor('login: ');
      assert.equal((await call(t, token, 'POST', `service/${id}/suspend`)).status, 200);
      const closed = await c.closed;
      assert.equal(closed.code, 4002);
      await waitForStatus(t, token, id, 'suspended');

      const refused = await call(t, token, 'POST', `service/${id}/console`, undefined, {
        'x-envelope-variant': 'B',
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error_code, 'invalid_state');
      // Both ended with the suspension: the session and the link made before it.
      const ended = await upgrade(origin, 'serial', cookieOf(setCookie));
      assert.equal(ended.status, 401);
      assert.match(ended.body, /invalid_token/);
      const late = await open(unopened.path);
      assert.equal(late.status, 403);
      assert.match(late.body, /already used or has expired/);
      assert.equal(late.setCookie, undefined);
    });

    test('a session the service ended stays ended once it runs again', async () => {
      const id = await orderRunning(t, token, 'revive.example.com');
      const cookie = cookieOf((await open((await link(id)).path)).setCookie);
      const unopened = await link(id);
      const status = async () => (await upgrade(origin, 'serial', cookie)).status;
      assert.equal(await status(), 101);
      assert.equal((await call(t, token, 'POST', `service/${id}/suspend`)).status, 200);
      await waitForStatus(t, token, id, 'suspended');
      assert.notEqual(await status(), 101);
      assert.equal((await call(t, token, 'POST', `service/${id}/unsuspend`)).status, 200);
      await waitForStatus(t, token, id, 'running');
      assert.equal(await status(), 401, 'the suspension lifted does not bring the session back');
      assert.equal((await open(unopened.path)).status, 403, 'nor the link made before it');

      // A restart leaves `running` for a moment (`restarting`): that ends a session too.
      const again = cookieOf((await open((await link(id)).path)).setCookie);
      assert.equal((await upgrade(origin, 'serial', again)).status, 101);
      assert.equal((await call(t, token, 'POST', `service/${id}/restart`)).status, 200);
      await waitForStatus(t, token, id, 'running');
      assert.equal((await upgrade(origin, 'serial', again)).status, 401);
    });

    test('disabling the reseller closes its open consoles and ends their sessions for good', async () => {
      const app = await t.client({ reseller: 'disabled-later' });
      const own = await t.token({ client: app });
      const id = await orderRunning(t, own, 'reseller-off.example.com');
      const cookie = cookieOf((await open((await link(id, own)).path)).setCookie);
      const unopened = await link(id, own);
      const c = connect(origin, cookie);
      await c.waitFor('login: ');
      const ops = await operatorToken(t);
      const reseller = await findResellerByName(t.ctx.store.db, 'disabled-later');
      assert.ok(reseller);
      assert.equal((await opsCall(t, ops, 'POST', `resellers/${reseller.id}/disable`)).status, 200);
      const closed = await closedWithin(c.closed);
      assert.equal(closed.code, 4001);
      assert.match(closed.reason, /session has ended/);
      assert.equal((await upgrade(origin, 'serial', cookie)).status, 401);
      assert.equal((await opsCall(t, ops, 'POST', `resellers/${reseller.id}/enable`)).status, 200);
      assert.equal((await upgrade(origin, 'serial', cookie)).status, 401, 'enabled again: still ended');
      assert.equal((await open(unopened.path)).status, 403);
    });

    test('disabling the application, or revoking its tokens, ends the consoles it opened only', async () => {
      const ops = await operatorToken(t);
      const reseller = 'two-apps';
      const revoked = await t.client({ reseller });
      const disabled = await t.client({ reseller });
      const other = await t.client({ reseller });
      const tokens = await Promise.all([revoked, disabled, other].map((client) => t.token({ client })));
      const id = await orderRunning(t, tokens[2]!, 'apps.example.com');
      const cookies: string[] = [];
      for (const as of tokens) cookies.push(cookieOf((await open((await link(id, as)).path)).setCookie));
      const c = connect(origin, cookies[0]!);
      await c.waitFor('login: ');
      const resellerId = (await findResellerByName(t.ctx.store.db, reseller))?.id;
      const app = (client: { client_id: string }, verb: string) =>
        opsCall(t, ops, 'POST', `resellers/${resellerId}/applications/${client.client_id}/${verb}`);

      assert.equal((await app(revoked, 'revoke-tokens')).status, 200);
      assert.equal((await closedWithin(c.closed)).code, 4001);
      assert.equal((await upgrade(origin, 'serial', cookies[0])).status, 401);
      assert.equal((await upgrade(origin, 'serial', cookies[1])).status, 101);
      assert.equal((await app(disabled, 'disable')).status, 200);
      assert.equal((await app(disabled, 'enable')).status, 200);
      assert.equal((await upgrade(origin, 'serial', cookies[1])).status, 401, 'enabled again: still ended');
      assert.equal((await upgrade(origin, 'serial', cookies[2])).status, 101, 'another application’s');
    });

    test('the operator API opens a console for any reseller’s service', async () => {
      const id = await orderRunning(t, token, 'ops.example.com');
      const ops = await operatorToken(t);
      const res = await opsCall(t, ops, 'POST', `services/${id}/console`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const page = await open(new URL(res.body.data.url).pathname);
      assert.equal(page.status, 200);
      const other = await t.token({ reseller: 'someone-else' });
      const notTheirs = await call(t, other, 'POST', `service/${id}/console`);
      assert.equal(notTheirs.status, 404);
    });

    test('a link asked with a token revoked a moment ago, not yet seen by the process, is refused', async () => {
      const client = await t.client({ reseller: 'cache-lag' });
      const own = await t.token({ client });
      const id = await orderRunning(t, own, 'lag.example.com');
      // The process has the application's state now, and is not told of the revocation below
      // (another process made it): the token passes for a couple of seconds.
      assert.equal((await call(t, own, 'GET', `service/${id}/details`)).status, 200);
      await t.ctx.store.db
        .updateTable('clients')
        .set((eb) => ({ token_version: eb('token_version', '+', 1) }))
        .where('id', '=', client.client_id)
        .execute();
      assert.equal((await call(t, own, 'GET', `service/${id}/details`)).status, 200);
      const res = await call(t, own, 'POST', `service/${id}/console`);
      assert.equal(res.status, 401, JSON.stringify(res.body));
    });

    test('disabling the operator ends the consoles it opened', async () => {
      const id = await orderRunning(t, token, 'ops-off.example.com');
      const operator = await createTestOperator(t);
      const ops = await operatorToken(t, operator);
      const res = await opsCall(t, ops, 'POST', `services/${id}/console`);
      const cookie = cookieOf((await open(new URL(res.body.data.url).pathname)).setCookie);
      const mine = cookieOf((await open((await link(id)).path)).setCookie);
      assert.equal((await upgrade(origin, 'serial', cookie)).status, 101);
      await setOperatorEnabledByName(t.ctx.store.db, operator.operator, false, clock.now());
      assert.equal((await upgrade(origin, 'serial', cookie)).status, 401);
      assert.equal((await upgrade(origin, 'serial', mine)).status, 101, 'the application’s stays');
    });
  });
}

describe('service console without a driver on this process', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, { store: 'sqlite' });
  });
  after(() => t.close());

  test('the link answers 503 console_unavailable', async () => {
    const token = await t.token();
    const res = await call(t, token, 'POST', 'service/create-order', {
      product_id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01',
      domain_name: 'nodriver.example.com',
      template_id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01',
      cpu: 1,
      ram: 1,
      hdd: 20,
      ip: 1,
      backup: 10,
    });
    const id = res.body.data[0].service_id as string;
    await t.ctx.store.db.updateTable('services').set({ status: 'running' }).where('id', '=', id).execute();
    const refused = await call(t, token, 'POST', `service/${id}/console`, undefined, {
      'x-envelope-variant': 'B',
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error_code, 'console_unavailable');
  });
});
