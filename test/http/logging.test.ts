import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { buildApp } from '../../src/http/app.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, createTestApp } from '../helpers/app.ts';

test('logs are JSON with request ids, and never carry secrets, tokens or passwords', async () => {
  const t = await createTestApp({}, { worker: true });
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const app = buildApp(t.ctx, { logger: { level: 'trace', stream } });
  try {
    await app.ready();
    const client = await t.client();
    const tokenRes = await app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token`,
      payload: {
        grant_type: 'client_credentials',
        client_id: client.client_id,
        client_secret: client.client_secret,
      },
    });
    const token = tokenRes.json().access_token as string;
    const auth = { authorization: `Bearer ${token}`, 'x-request-id': 'trace-me-123' };
    const p = DEMO_CATALOG.products[0]!;
    const order = await app.inject({
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
    const { service_id: id, password } = JSON.parse(order.json().data);
    await app.inject({
      method: 'POST',
      url: `${API}/service/${id}/reset-password`,
      headers: auth,
      payload: { password: 'Very-secret-9' },
    });
    await app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token`,
      payload: {
        grant_type: 'client_credentials',
        client_id: client.client_id,
        client_secret: 'wrong-secret-value',
      },
    });
    app.log.info(
      { password: 'Very-secret-9', client_secret: client.client_secret, access_token: token },
      'a careless log line',
    );

    const all = lines.join('\n');
    assert.ok(lines.length > 5, 'requests were logged');
    for (const l of lines) JSON.parse(l);
    assert.ok(
      lines.some((l) => JSON.parse(l).reqId === 'trace-me-123'),
      'the request id is on the log lines',
    );
    for (const secret of [client.client_secret, token, password, 'Very-secret-9', 'wrong-secret-value']) {
      assert.ok(!all.includes(secret), `a secret leaked into the logs: ${secret.slice(0, 6)}...`);
    }
    assert.match(all, /\[redacted\]/);
  } finally {
    await app.close();
    await t.close();
  }
});
