import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { startBackground } from '../../src/jobs/background.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, call, createTestApp, testEnv, waitForStatus } from '../helpers/app.ts';

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
