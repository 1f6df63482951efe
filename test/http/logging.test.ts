import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { LOG_REDACT } from '../../src/domain/log-redaction.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { SERVICE_CONSOLE } from '../../src/http/base-path.ts';
import { requestIdOf } from '../../src/http/plugins/request-id.ts';
import { AccessLog, RequestLog, requestLogging } from '../../src/http/plugins/request-log.ts';
import { startBackground } from '../../src/jobs/background.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, call, createTestApp, orderRunning, testEnv, waitForStatus } from '../helpers/app.ts';

test('logs are JSON with request ids, and never carry secrets, tokens or passwords', async () => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  // The app and its worker log to `stream`: job logs are checked as well as request logs.
  const t = await createTestApp({}, { worker: true, log: stream });
  try {
    const client = await t.client();
    const tokenRes = await t.app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token`,
      payload: {
        grant_type: 'client_credentials',
        client_id: client.client_id,
        client_secret: client.client_secret,
      },
    });
    assert.equal(tokenRes.statusCode, 200);
    const token = tokenRes.json().access_token as string;
    const auth = { authorization: `Bearer ${token}`, 'x-request-id': 'trace-me-123' };
    const p = DEMO_CATALOG.products[0]!;
    const order = await t.app.inject({
      method: 'POST',
      url: `${API}/service/create-order`,
      headers: { ...auth, 'x-envelope-variant': 'A' },
      payload: {
        product_id: p.id,
        domain_name: 'log.example.com',
        template_id: p.os_templates[0],
        cpu: 1,
        ram: 1,
        hdd: 20,
        ip: 1,
        backup: 10,
      },
    });
    assert.equal(order.statusCode, 200, order.body);
    const { service_id: id, password } = JSON.parse(order.json().data);
    assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
    await waitForStatus(t, token, id, 'running');
    const reset = await t.app.inject({
      method: 'POST',
      url: `${API}/service/${id}/reset-password`,
      headers: auth,
      payload: { password: 'Very-secret-9' },
    });
    assert.equal(reset.statusCode, 200, reset.body);
    await waitForStatus(t, token, id, 'running');

    // A job that fails logs what failed: a worker on a hypervisor that refuses everything.
    await t.background?.stop(1000);
    const refusing = await createDriver(
      loadConfig(testEnv(t.dataDir, { VRP_SIM_FAULTS: 'permanent=1' })),
      t.ctx.store.db,
    );
    const failing = startBackground(t.ctx, refusing, t.app.log, { pollMs: 20 });
    try {
      const again = await call(t, token, 'POST', `service/${id}/reset-password`, {
        password: 'Failing-secret-7',
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      await waitForStatus(t, token, id, 'running');
    } finally {
      await failing.stop(1000);
      await refusing.close();
    }

    await t.app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token`,
      payload: {
        grant_type: 'client_credentials',
        client_id: client.client_id,
        client_secret: 'wrong-secret-value',
      },
    });
    t.app.log.info(
      { password: 'Very-secret-9', client_secret: client.client_secret, access_token: token },
      'a careless log line',
    );

    const all = lines.join('\n');
    assert.ok(lines.length > 5, 'requests were logged');
    const parsed = lines.map((l) => JSON.parse(l));
    assert.ok(
      parsed.some((l) => l.reqId === 'trace-me-123'),
      'the request id is on the log lines',
    );
    // The worker's own line about the failed job (not the request's "job queued").
    assert.ok(
      parsed.some((l) => l.msg === 'driver error' && l.action === 'reset_password' && l.reqId === undefined),
      `the worker logged the failed job: ${all}`,
    );
    for (const secret of [
      client.client_secret,
      token,
      password,
      'Very-secret-9',
      'Failing-secret-7',
      'wrong-secret-value',
    ]) {
      assert.ok(!all.includes(secret), `a secret leaked into the logs: ${secret.slice(0, 6)}...`);
    }
    assert.match(all, /\[redacted\]/);
  } finally {
    await t.close();
  }
});

/** A stream that keeps the JSON lines written to it. */
function lineSink(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { stream, lines };
}

test('one access line per request, once it is answered: the request, its status and time; none for probes', async () => {
  const { stream, lines } = lineSink();
  const t = await createTestApp({}, { log: stream });
  try {
    const token = await t.token();
    const version = await t.app.inject({
      method: 'GET',
      url: `${API}/version?client_secret=hidden-value&access_token=token-in-url&Password=pw-in-url&page=2`,
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'one-line-1' },
    });
    assert.equal(version.statusCode, 200);
    const refused = await t.app.inject({
      method: 'GET',
      url: `${API}/version`,
      headers: { 'x-request-id': 'one-line-2' },
    });
    assert.equal(refused.statusCode, 401);
    assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);

    const of = (id: string) => lines.filter((l) => l['reqId'] === id);
    assert.equal(of('one-line-1').length, 1, JSON.stringify(lines));
    const [line] = of('one-line-1');
    assert.equal(line?.['msg'], 'request completed');
    assert.equal(line?.['level'], 30);
    assert.deepEqual(line?.['res'], { statusCode: 200 });
    assert.equal(typeof line?.['responseTime'], 'number');
    const req = line?.['req'] as Record<string, unknown>;
    assert.equal(req['method'], 'GET');
    assert.equal(
      req['url'],
      `${API}/version?client_secret=[redacted]&access_token=[redacted]&Password=[redacted]&page=2`,
    );
    // Access lines are written without the logger's redaction (src/http/plugins/request-log.ts):
    // they hold only these members, none of them a secret (a new one must be reviewed here).
    assert.deepEqual(Object.keys(line ?? {}).sort(), [
      'hostname',
      'level',
      'msg',
      'pid',
      'req',
      'reqId',
      'res',
      'responseTime',
      'time',
    ]);
    // (remotePort is absent here: an injected request has no socket port.)
    const reqMembers = ['host', 'method', 'remoteAddress', 'remotePort', 'url'];
    assert.ok(
      Object.keys(req).every((k) => reqMembers.includes(k)),
      `the access line's req: ${Object.keys(req)}`,
    );
    const written = JSON.stringify(lines);
    for (const secret of [token, 'hidden-value', 'token-in-url', 'pw-in-url'])
      assert.ok(
        !written.includes(secret),
        `a secret of the request is in the logs: ${secret.slice(0, 6)}...`,
      );
    assert.deepEqual(
      of('one-line-2').map((l) => [l['msg'], (l['res'] as { statusCode: number }).statusCode]),
      [['request completed', 401]],
    );
    assert.ok(!lines.some((l) => l['msg'] === 'incoming request'), 'no line as a request comes in');
    assert.ok(
      !lines.some((l) => (l['req'] as { url?: string } | undefined)?.url === '/healthz'),
      'a probe (its route logs at warn) has no access line',
    );
  } finally {
    await t.close();
  }
});

test("a service console link's token is not in its access line, nor in any other line", async () => {
  const { stream, lines } = lineSink();
  const t = await createTestApp({}, { worker: true, log: stream });
  try {
    const token = await t.token();
    const id = await orderRunning(t, token, 'console-log.example.com');
    const made = await call(t, token, 'POST', `service/${id}/console`, undefined, {
      'x-envelope-variant': 'B',
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const path = new URL(made.body.data.url).pathname;
    const secret = path.slice(`${SERVICE_CONSOLE}/`.length);
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    const requests: [string, string][] = [
      ['console-link-1', path], // opens it
      ['console-link-2', path], // used already: refused
      ['console-link-3', `${path}?x=1`],
      ['console-link-4', `${path}/more`], // no route
    ];
    const statuses: number[] = [];
    for (const [reqId, url] of requests) {
      statuses.push(
        (await t.app.inject({ method: 'GET', url, headers: { 'x-request-id': reqId } })).statusCode,
      );
    }
    assert.deepEqual(statuses, [200, 403, 403, 404]);
    const urlOf = (reqId: string) =>
      (
        lines.find((l) => l['reqId'] === reqId && l['msg'] === 'request completed')?.['req'] as {
          url?: string;
        }
      )?.url;
    assert.equal(urlOf('console-link-1'), `${SERVICE_CONSOLE}/[redacted]`);
    assert.equal(urlOf('console-link-2'), `${SERVICE_CONSOLE}/[redacted]`);
    assert.equal(urlOf('console-link-3'), `${SERVICE_CONSOLE}/[redacted]?x=1`);
    assert.equal(urlOf('console-link-4'), `${SERVICE_CONSOLE}/[redacted]`);
    assert.ok(!JSON.stringify(lines).includes(secret), 'the link token is in the logs');
    // The console's files and WebSockets carry no secret: their paths are logged as they are.
    const assets = `${SERVICE_CONSOLE}/assets/0/service-console.js`;
    await t.app.inject({ method: 'GET', url: assets, headers: { 'x-request-id': 'console-assets' } });
    assert.equal(urlOf('console-assets'), assets);
  } finally {
    await t.close();
  }
});

test("a request's own lines carry its id at every level, and its access line carries it once", async () => {
  const { stream, lines } = lineSink();
  const app = Fastify({ logger: { level: 'trace', stream }, genReqId: requestIdOf, ...requestLogging });
  app.get('/talk', async (request) => {
    const log = request.log;
    assert.equal(log.level, 'trace');
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const)
      log[level]({ said: level }, 'hello');
    log.silent('nothing');
    log.child({ part: 'inner' }).info('from a child');
    return {};
  });
  // An answer that could not be sent (Fastify says so with the error of the response's stream).
  app.get('/broken', async (request, reply) => {
    requestLogging.logController.requestCompleted(new Error('broken pipe'), request, reply);
    return {};
  });
  // The same after the request logged a line of its own (its access line goes through its logger).
  app.get('/talk-then-break', async (request, reply) => {
    request.log.info('about to break');
    requestLogging.logController.requestCompleted(new Error('broken again'), request, reply);
    return {};
  });
  try {
    assert.equal((await app.inject({ url: '/talk', headers: { 'x-request-id': 'talk-1' } })).statusCode, 200);
    const mine = lines.filter((l) => l['reqId'] === 'talk-1');
    assert.deepEqual(
      mine.filter((l) => l['msg'] === 'hello').map((l) => l['said']),
      ['trace', 'debug', 'info', 'warn', 'error', 'fatal'],
    );
    assert.equal(mine.find((l) => l['msg'] === 'from a child')?.['part'], 'inner');
    const access = mine.filter((l) => l['msg'] === 'request completed');
    assert.equal(access.length, 1);
    assert.ok(!lines.some((l) => l['msg'] === 'nothing'));

    assert.equal(
      (await app.inject({ url: '/broken', headers: { 'x-request-id': 'broken-1' } })).statusCode,
      200,
    );
    const errored = lines.filter((l) => l['reqId'] === 'broken-1' && l['msg'] === 'request errored');
    assert.equal(errored.length, 1);
    assert.equal(errored[0]?.['level'], 50);
    assert.equal((errored[0]?.['err'] as { message?: string } | undefined)?.message, 'broken pipe');

    assert.equal(
      (await app.inject({ url: '/talk-then-break', headers: { 'x-request-id': 'broken-2' } })).statusCode,
      200,
    );
    const second = lines.filter((l) => l['reqId'] === 'broken-2');
    assert.deepEqual(
      second.map((l) => l['msg']),
      ['about to break', 'request errored', 'request completed'],
    );
    assert.equal((second[1]?.['err'] as { message?: string } | undefined)?.message, 'broken again');
  } finally {
    await app.close();
  }
});

test("a request's line below the level is dropped before its child logger is made; one at the level is written", () => {
  const { stream, lines } = lineSink();
  const logger = pino({ level: 'warn', redact: LOG_REDACT }, stream);
  let children = 0;
  const parent = new Proxy(logger, {
    get: (target, key, receiver) =>
      key === 'child'
        ? (...args: Parameters<typeof logger.child>) => {
            children++;
            return target.child(...args);
          }
        : Reflect.get(target, key, receiver),
  });
  const log = new RequestLog(parent, { reqId: 'quiet-1' }, {});
  log.trace({ said: 'trace' }, 'dropped');
  log.debug({ said: 'debug' }, 'dropped');
  log.info({ said: 'info', password: 'hunter2' }, 'dropped');
  assert.equal(children, 0, 'no child logger for lines nobody writes');
  assert.equal(log.level, 'warn');
  log.warn({ said: 'warn', password: 'hunter2' }, 'written');
  log.info('still dropped');
  assert.equal(children, 1);
  assert.deepEqual(
    lines.map((l) => [l['msg'], l['reqId'], l['said'], l['password']]),
    [['written', 'quiet-1', 'warn', '[redacted]']],
  );
  // A route's own level (a probe's) is the request's level.
  const probe = new RequestLog(parent, { reqId: 'probe-1' }, { level: 'error' });
  probe.warn('dropped');
  probe.error('probe failed');
  assert.deepEqual(
    lines.slice(1).map((l) => [l['msg'], l['reqId']]),
    [['probe failed', 'probe-1']],
  );
});

test("with Fastify's own request loggers, the access log keeps Fastify's line as the answer goes out", async () => {
  const { stream, lines } = lineSink();
  const app = Fastify({
    logger: { level: 'info', stream },
    genReqId: requestIdOf,
    logController: new AccessLog(),
  });
  app.get('/', async () => ({}));
  try {
    assert.equal((await app.inject({ url: '/', headers: { 'x-request-id': 'plain-1' } })).statusCode, 200);
    assert.deepEqual(
      lines.filter((l) => l['reqId'] === 'plain-1').map((l) => l['msg']),
      ['request completed'],
    );
  } finally {
    await app.close();
  }
});
