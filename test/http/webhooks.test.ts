/**
 * docs/design/contract.md#events-and-webhooks, registering receivers: `POST API/webhooks`,
 * `GET API/webhooks`, `POST API/webhooks/{id}/delete`; at most 10 per reseller, http(s) URLs on public
 * addresses only (unless the operator allows private ones), tenants apart, the secret shown once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { API, call, createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';
import { RANGE_NEIGHBOURS, REFUSED_RANGES, tableLookup } from '../helpers/webhooks.ts';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const PUBLIC = '93.184.216.34';

/** Names the tests use, resolved without asking anyone. */
const lookup = tableLookup({
  'hooks.example.com': PUBLIC,
  'billing.example.net': '2606:2800:220:1:248:1893:25c8:1946',
  localhost: '127.0.0.1',
  'intranet.example.com': '10.1.2.3',
  'metadata.example.com': '169.254.169.254',
  'v6-private.example.com': 'fd12:3456::1',
  'mapped.example.com': '::ffff:192.168.1.10',
});

const create = (t: TestApp, token: string, body: unknown, headers: Record<string, string> = {}) =>
  call(t, token, 'POST', 'webhooks', body, headers);
const list = (t: TestApp, token: string) => call(t, token, 'GET', 'webhooks');
const remove = (t: TestApp, token: string, id: string, headers: Record<string, string> = {}) =>
  call(t, token, 'POST', `webhooks/${id}/delete`, undefined, headers);

for (const store of testStores()) {
  describe(`webhooks (${store})`, () => {
    test('create answers the webhook and its secret once; list shows it without; delete removes it', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token();
        const all = await create(t, token, { url: 'https://hooks.example.com/vrp?tenant=7#frag' });
        assert.equal(all.status, 200, JSON.stringify(all.body));
        assert.equal(all.body.status, 'Success');
        const hook = all.body.data;
        assert.deepEqual(Object.keys(hook).sort(), ['created_at', 'events', 'secret', 'url', 'webhook_id']);
        assert.match(hook.webhook_id, /^[0-9a-f-]{36}$/);
        assert.equal(
          hook.url,
          'https://hooks.example.com/vrp?tenant=7',
          'the fragment is never sent, so not kept',
        );
        assert.equal(hook.events, null, 'no events given: every type, also types added later');
        assert.match(hook.secret, SECRET);
        assert.equal(Buffer.from(hook.secret.slice(6), 'base64').length, 32);

        const some = await create(t, token, {
          url: 'http://billing.example.net/hook',
          events: ['job.finished'],
        });
        assert.equal(some.status, 200);
        assert.deepEqual(some.body.data.events, ['job.finished']);
        assert.notEqual(some.body.data.secret, hook.secret);

        const listed = await list(t, token);
        assert.equal(listed.status, 200);
        const { secret: _s1, ...first } = hook;
        const { secret: _s2, ...second } = some.body.data;
        assert.deepEqual(listed.body.data, [first, second], 'oldest first, no secrets');

        // Stored sealed: the server can sign with it, the store does not show it.
        const row = await t.ctx.store.db
          .selectFrom('webhooks')
          .selectAll()
          .where('id', '=', hook.webhook_id)
          .executeTakeFirstOrThrow();
        assert.ok(!JSON.stringify(row).includes(hook.secret.slice(6)));
        assert.equal(t.ctx.secretBox.open(row.secret_enc), hook.secret);

        const deleted = await remove(t, token, hook.webhook_id.toUpperCase());
        assert.equal(deleted.status, 200);
        assert.deepEqual(deleted.body.data, []);
        assert.deepEqual((await list(t, token)).body.data, [second]);
        const again = await remove(t, token, hook.webhook_id);
        assert.equal(again.status, 404);
        assert.equal(again.body.error_code, 'webhook_not_found');
        for (const id of ['not-a-uuid', randomUUID()]) {
          const res = await remove(t, token, id);
          assert.equal(res.status, 404, id);
          assert.equal(res.body.error_code, 'webhook_not_found');
        }
      } finally {
        await t.close();
      }
    });

    test('variant A: the payload as JSON text, and a message on deletion', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token({ variant: 'A' });
        const res = await create(t, token, { url: 'https://hooks.example.com/a' });
        assert.equal(res.status, 200);
        assert.equal(res.body.success, 'true');
        const hook = JSON.parse(res.body.data);
        assert.match(hook.secret, SECRET);
        const listed = await list(t, token);
        assert.deepEqual(
          JSON.parse(listed.body.data).map((w: any) => w.webhook_id),
          [hook.webhook_id],
        );
        const deleted = await remove(t, token, hook.webhook_id);
        assert.equal(deleted.body.success, 'true');
        assert.equal(deleted.body.message, 'Webhook deleted');
        assert.equal(deleted.body.data, '[]');
      } finally {
        await t.close();
      }
    });

    test('at most 10 per reseller, also when registered all at once; another reseller has its own 10', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token({ reseller: 'acme' });
        const results = await Promise.all(
          Array.from({ length: 14 }, (_, i) => create(t, token, { url: `https://hooks.example.com/${i}` })),
        );
        const ok = results.filter((r) => r.status === 200);
        const refused = results.filter((r) => r.status !== 200);
        assert.equal(ok.length, 10);
        for (const r of refused) {
          assert.equal(r.status, 400);
          assert.equal(r.body.error_code, 'webhook_limit_reached');
          assert.match(r.body.message, /at most 10 webhooks/);
        }
        assert.equal((await list(t, token)).body.data.length, 10);

        const other = await t.token({ reseller: 'globex' });
        assert.equal((await create(t, other, { url: 'https://hooks.example.com/g' })).status, 200);

        // Deleting one makes room for one.
        assert.equal((await remove(t, token, ok[0]!.body.data.webhook_id)).status, 200);
        assert.equal((await create(t, token, { url: 'https://hooks.example.com/again' })).status, 200);
        assert.equal((await create(t, token, { url: 'https://hooks.example.com/over' })).status, 400);
      } finally {
        await t.close();
      }
    });

    test("tenants: a reseller neither sees nor deletes another reseller's webhooks", async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const mine = await t.token({ reseller: 'acme' });
        const theirs = await t.token({ reseller: 'globex' });
        const hook = (await create(t, mine, { url: 'https://hooks.example.com/mine' })).body.data;
        assert.deepEqual((await list(t, theirs)).body.data, []);
        const res = await remove(t, theirs, hook.webhook_id);
        assert.equal(res.status, 404);
        assert.equal(res.body.error_code, 'webhook_not_found');
        assert.equal((await list(t, mine)).body.data.length, 1, 'still there');
      } finally {
        await t.close();
      }
    });

    test('bad bodies are 400 validation_failed naming the field, and nothing is stored', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token();
        const cases: [unknown, RegExp][] = [
          [{}, /url/],
          [{ url: 42 }, /url/],
          [{ url: '' }, /url/],
          [{ url: `https://hooks.example.com/${'a'.repeat(2040)}` }, /url/],
          [{ url: 'hooks.example.com/hook' }, /body\.url: not an absolute URL/],
          [{ url: 'ftp://hooks.example.com/hook' }, /must start with https:\/\/ or http:\/\//],
          [{ url: 'javascript:alert(1)' }, /must start with https:\/\/ or http:\/\//],
          [{ url: 'https://user:pw@hooks.example.com/' }, /user name or password/],
          [{ url: 'https://hooks.example.com/', events: [] }, /events/],
          [{ url: 'https://hooks.example.com/', events: ['service.created'] }, /events/],
          [{ url: 'https://hooks.example.com/', events: ['job.finished', 'job.finished'] }, /events/],
          [{ url: 'https://hooks.example.com/', events: 'job.finished' }, /events/],
          [[], /body/],
        ];
        for (const [body, message] of cases) {
          const res = await create(t, token, body);
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.equal(res.body.error_code, 'validation_failed', JSON.stringify(body));
          assert.match(res.body.message, message, JSON.stringify(body));
        }
        const notJson = await t.app.inject({
          method: 'POST',
          url: `${API}/webhooks`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          payload: '{"url":',
        });
        assert.equal(notJson.statusCode, 400);
        assert.equal(notJson.json().error_code, 'validation_failed');
        assert.deepEqual((await list(t, token)).body.data, []);
      } finally {
        await t.close();
      }
    });

    test('receivers on private, loopback, link-local or unspecified addresses are refused, by name or number', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token();
        const cases: [string, RegExp][] = [
          ['http://127.0.0.1:8080/hook', /127\.0\.0\.1 is a loopback address/],
          ['http://localhost/hook', /localhost resolves to 127\.0\.0\.1, a loopback address/],
          ['http://2130706433/hook', /127\.0\.0\.1 is a loopback address/],
          ['http://[::1]/hook', /::1 is a loopback address/],
          ['https://10.0.0.8/hook', /10\.0\.0\.8 is a private address/],
          ['https://intranet.example.com/hook', /resolves to 10\.1\.2\.3, a private address/],
          ['http://169.254.169.254/latest/meta-data', /link-local/],
          ['http://metadata.example.com/', /link-local/],
          ['http://[fe80::1]/', /link-local/],
          ['http://0.0.0.0:9000/', /unspecified/],
          ['http://v6-private.example.com/', /fd12:3456::1, a private \(unique local\) address/],
          ['http://mapped.example.com/', /::ffff:192\.168\.1\.10, a private address/],
          ['http://[::ffff:10.0.0.1]/', /private/],
          ['http://224.0.0.1/', /multicast/],
          ['https://nowhere.example.org/hook', /nowhere\.example\.org could not be resolved \(ENOTFOUND\)/],
        ];
        for (const [url, message] of cases) {
          const res = await create(t, token, { url });
          assert.equal(res.status, 400, url);
          assert.equal(res.body.error_code, 'validation_failed', url);
          assert.match(res.body.message, /^body\.url: /, url);
          assert.match(res.body.message, message, url);
        }
        assert.deepEqual((await list(t, token)).body.data, []);
        assert.equal((await create(t, token, { url: `http://${PUBLIC}:8080/hook` })).status, 200);
      } finally {
        await t.close();
      }
    });

    test('every IANA special-purpose range is refused by number, first to last address; its neighbours are taken', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token();
        const host = (a: string) => (a.includes(':') ? `[${a}]` : a);
        for (const [first, last, kind] of REFUSED_RANGES) {
          for (const address of new Set([first, last])) {
            const url = `https://${host(address)}/hook`;
            const res = await create(t, token, { url });
            assert.equal(res.status, 400, url);
            assert.equal(res.body.error_code, 'validation_failed', url);
            // The URL's own form of the address (an IPv6 literal is written shortest).
            const shown = new URL(url).hostname.replace(/^\[|\]$/g, '');
            const article = /^[aeiou]/.test(kind) ? 'an' : 'a';
            assert.equal(
              res.body.message,
              `body.url: ${shown} is ${article} ${kind} address, which webhooks may not reach`,
              url,
            );
          }
        }
        assert.deepEqual((await list(t, token)).body.data, []);
        // At most 10 webhooks per reseller: the neighbours are registered and deleted again.
        for (const address of [...RANGE_NEIGHBOURS, '::ffff:8.8.8.8']) {
          const res = await create(t, token, { url: `https://${host(address)}/hook` });
          assert.equal(res.status, 200, `${address}: ${JSON.stringify(res.body)}`);
          assert.equal((await remove(t, token, res.body.data.webhook_id)).status, 200);
        }
      } finally {
        await t.close();
      }
    });

    test('only ports 80, 443 and 1024-65535 are taken, by number or by name', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token();
        for (const port of [0, 1, 21, 22, 25, 53, 79, 81, 110, 442, 444, 587, 1023]) {
          for (const url of [`http://8.8.8.8:${port}/`, `https://hooks.example.com:${port}/hook`]) {
            const res = await create(t, token, { url });
            assert.equal(res.status, 400, url);
            assert.equal(res.body.error_code, 'validation_failed', url);
            assert.equal(
              res.body.message,
              `body.url: port ${port} is not allowed: webhooks use port 80, 443 or one from 1024 to 65535`,
              url,
            );
          }
        }
        const out = await create(t, token, { url: 'http://8.8.8.8:65536/' });
        assert.equal(out.status, 400);
        assert.equal(out.body.error_code, 'validation_failed');
        assert.deepEqual((await list(t, token)).body.data, []);
        for (const url of [
          'http://8.8.8.8/',
          'http://8.8.8.8:80/',
          'https://8.8.8.8/',
          'https://8.8.8.8:443/',
          'http://8.8.8.8:443/',
          'https://8.8.8.8:80/',
          'https://hooks.example.com:1024/',
          'https://hooks.example.com:8443/',
          'http://[2606:4700::1111]:65535/',
        ]) {
          const res = await create(t, token, { url });
          assert.equal(res.status, 200, `${url}: ${JSON.stringify(res.body)}`);
        }
      } finally {
        await t.close();
      }
    });

    test('with VRP_WEBHOOK_ALLOW_PRIVATE=1 private receivers are taken, and no name is looked up', async () => {
      const counting = tableLookup({});
      const t = await createTestApp({ VRP_WEBHOOK_ALLOW_PRIVATE: '1' }, { store, lookup: counting });
      try {
        const token = await t.token();
        for (const url of [
          'http://127.0.0.1:9/hook',
          'http://[::1]:9/',
          'http://receiver.internal/hook',
          'http://8.8.8.8:22/',
          'http://[2001::1]/',
        ]) {
          const res = await create(t, token, { url });
          assert.equal(res.status, 200, `${url}: ${JSON.stringify(res.body)}`);
        }
        assert.deepEqual(counting.calls, []);
        // The form is still checked.
        assert.equal((await create(t, token, { url: 'ftp://127.0.0.1/' })).status, 400);
      } finally {
        await t.close();
      }
    });

    test('need the service scope', async () => {
      const t = await createTestApp({}, { store, lookup });
      try {
        const token = await t.token({ scopes: ['access', 'products'] });
        for (const res of [
          await create(t, token, { url: 'https://hooks.example.com/' }),
          await list(t, token),
          await remove(t, token, randomUUID()),
        ]) {
          assert.equal(res.status, 403);
          assert.equal(res.body.error_code, 'insufficient_scope');
        }
      } finally {
        await t.close();
      }
    });
  });
}
