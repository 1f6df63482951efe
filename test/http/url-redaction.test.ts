/**
 * Secrets put in a URL (`?access_token=`, `?client_secret=` ...) must not
 * reach the logs, which log every request's URL at the default level.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { buildApp } from '../../src/http/app.ts';
import { API, BASE, createTestApp } from '../helpers/app.ts';

test('secret query parameters are redacted from logged URLs at the default level', async () => {
  const t = await createTestApp();
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const level = loadConfig({ VRP_DATA_DIR: t.dataDir }).logLevel;
  const app = buildApp(t.ctx, { logger: { level, stream } });
  try {
    await app.ready();
    const client = await t.client();
    const token = await t.token({ client });
    const secrets = [token, client.client_secret, 'Pass-word-123', 'refresh-me-456', 'api-key-secret-789'];
    await app.inject({
      method: 'GET',
      url: `${API}/version?access_token=${encodeURIComponent(token)}&keep=visible`,
    });
    await app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token?grant_type=client_credentials&client_id=${client.client_id}&client_secret=${client.client_secret}`,
    });
    await app.inject({
      method: 'GET',
      url: `${API}/nothing?password=Pass-word-123&Refresh_Token=refresh-me-456&my%5Fsecret=api-key-secret-789`,
    });

    const urls = lines.map((l) => JSON.parse(l).req?.url).filter((u): u is string => typeof u === 'string');
    assert.equal(urls.length, 3, 'each request is logged with its URL');
    const all = lines.join('\n');
    for (const secret of secrets) {
      assert.ok(!all.includes(secret), `a secret reached the logs: ${secret.slice(0, 8)}...`);
    }
    assert.equal(urls[0], `${API}/version?access_token=[redacted]&keep=visible`);
    assert.match(urls[1]!, /client_id=vrp_[0-9a-f]+&client_secret=\[redacted\]$/);
    assert.equal(
      urls[2],
      `${API}/nothing?password=[redacted]&Refresh_Token=[redacted]&my%5Fsecret=[redacted]`,
    );
  } finally {
    await app.close();
    await t.close();
  }
});
