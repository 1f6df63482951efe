/**
 * Every route answers what docs/openapi.json declares for it. The harness
 * (test/helpers/response-check.ts) holds every answer of `app.inject` to the document with Ajv:
 * the envelope, variant B's `data`, and the JSON text in variant A's `data` against its
 * `contentSchema`. This drives every route through a service's whole life in both envelopes,
 * so that every operation of the document is met, answered 200 in each variant.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Variant } from '../../src/http/envelope.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { startPowerDnsApiStub } from '../helpers/powerdns.ts';
import { testStores } from '../helpers/stores.ts';

const doc = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));

const product = DEMO_CATALOG.products[0]!;
const amounts = {
  cpu: Number(product.config.cpu.min),
  ram: Number(product.config.ram.min),
  hdd: Number(product.config.hdd.min),
  ip: Number(product.config.ip.min),
  backup: Number(product.config.backup.min),
};
const order = {
  product_id: product.id,
  domain_name: 'schemas.example.com',
  template_id: product.os_templates[0],
  ...amounts,
};
const NOBODY = '00000000-0000-4000-8000-000000000000';

for (const store of testStores()) {
  describe(`every answer matches the schema docs/openapi.json declares for it (${store})`, () => {
    let t: TestApp;
    let token: string;
    let dnsApi: Awaited<ReturnType<typeof startPowerDnsApiStub>>;
    /** The API operations answered 200, per variant: "B GET /path/{id}". */
    const answered = new Set<string>();

    before(async () => {
      // Reverse DNS answers with a DNS server's API behind it: a stand-in that takes every write.
      dnsApi = await startPowerDnsApiStub();
      t = await createTestApp(
        { ...dnsApi.env, VRP_RDNS_DEFAULT: 'ip-{ip}.example.net' },
        { worker: true, store },
      );
      token = await t.token();
    });
    after(async () => {
      await t.close();
      await dnsApi.close();
    });

    /**
     * Sends `method template` (path parameters filled from `params`) in `variant`, checks the
     * answer against the document, and returns the payload (variant A's `data` parsed).
     */
    async function send(
      variant: Variant,
      method: 'GET' | 'POST',
      template: string,
      params: Record<string, string> = {},
      body?: unknown,
      auth = `Bearer ${token}`,
    ): Promise<{ status: number; payload: any }> {
      const url = template.replace(/\{(\w+)\}/g, (_, name: string) => params[name] ?? '');
      const res = await t.app.inject({
        method,
        url,
        headers: {
          authorization: auth,
          'x-envelope-variant': variant,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        payload: body === undefined ? undefined : JSON.stringify(body),
      });
      assert.ok(doc.paths[template]?.[method.toLowerCase()], `the document has ${method} ${template}`);
      const json = res.json();
      if (res.statusCode !== 200) return { status: res.statusCode, payload: json };
      answered.add(`${variant} ${method} ${template}`);
      return { status: 200, payload: variant === 'B' ? json.data : JSON.parse(json.data) };
    }

    const api = (path: string) => `${API}/${path}`;
    const svc = (path: string) => api(`service/{service_id}/${path}`);

    for (const variant of ['B', 'A'] as const) {
      test(`variant ${variant}: every API route, through a service's life, and its errors`, async () => {
        const ok = async (...args: Parameters<typeof send>) => {
          const res = await send(...args);
          assert.equal(res.status, 200, `${args[1]} ${args[2]}: ${JSON.stringify(res.payload)}`);
          return res.payload;
        };
        await ok(variant, 'POST', api('test-connection'));
        await ok(variant, 'GET', api('version'));
        await ok(variant, 'GET', api('usage'));
        await ok(variant, 'GET', api('products'));
        await ok(variant, 'POST', api('products'));
        await ok(variant, 'GET', api('product/{product_uuid}/plans'), { product_uuid: product.id });

        const ordered = await ok(variant, 'POST', api('service/create-order'), {}, order);
        const service_id: string = variant === 'A' ? ordered.service_id : ordered[0].service_id;
        await ok(variant, 'POST', `${BASE}/v2/service/create-order`, {}, order);
        const id = { service_id };
        const settle = (status = 'running') => waitForStatus(t, token, service_id, status);

        await ok(variant, 'POST', svc('details'), id);
        await ok(variant, 'POST', svc('create'), id);
        await settle();
        for (const method of ['GET', 'POST'] as const) {
          await ok(variant, method, svc('details'), id);
          await ok(variant, method, svc('status'), id);
        }
        await ok(variant, 'POST', svc('start'), id); // already running: a message, no job
        await ok(variant, 'POST', svc('stop'), id);
        await settle('stopped');
        await ok(variant, 'POST', svc('start'), id);
        await ok(variant, 'POST', svc('restart'), id);
        const { cpu, ram, hdd, ip, backup } = amounts;
        await ok(variant, 'POST', svc('upgrade'), id, {
          CPU: cpu,
          RAM: ram,
          HDD: hdd,
          IP: ip,
          BACKUP: backup,
        });
        await ok(variant, 'POST', svc('reset-password'), id, { password: 'Another-pass-9' });
        await settle();
        await ok(variant, 'POST', svc('console'), id);
        await ok(variant, 'POST', svc('reinstall'), id, { template_id: product.os_templates[1] });
        await settle();

        await ok(variant, 'POST', svc('backup/create'), id);
        await settle();
        const [made] = await ok(variant, 'GET', svc('backups'), id);
        const backupId = { ...id, backup_id: made.backup_id };
        await ok(variant, 'POST', svc('backup/restore/{backup_id}'), backupId);
        await settle();
        await ok(variant, 'POST', svc('backup/delete/{backup_id}'), backupId);
        await settle();

        await ok(variant, 'POST', svc('backup-schedule/create'), id, { BsTime: '03:30', BSDays: 'mon,thu' });
        const [schedule] = await ok(variant, 'GET', svc('backup-schedule'), id);
        await ok(variant, 'POST', svc('backup-schedule/delete/{backup_schedule_id}'), {
          ...id,
          backup_schedule_id: schedule.backup_schedule_id,
        });

        const [address] = await ok(variant, 'GET', svc('rdns'), id);
        await ok(variant, 'POST', svc('rdns'), id, { ip: address.ip, ptr: 'mail.example.com' });
        assert.deepEqual(await ok(variant, 'POST', svc('rdns'), id, { ip: address.ip, ptr: null }), [
          { ip: address.ip, ptr: `ip-${address.ip.replaceAll('.', '-')}.example.net` },
        ]);

        const login = await ok(variant, 'POST', svc('rescue'), id);
        assert.equal(login.username, 'root');
        await settle('rescue');
        assert.ok((await ok(variant, 'GET', svc('details'), id)).rescue_until);
        await ok(variant, 'POST', svc('unrescue'), id);
        await settle();

        await ok(variant, 'POST', svc('suspend'), id, { suspend_reason: 'unpaid' });
        await settle('suspended');
        assert.equal((await ok(variant, 'GET', svc('details'), id)).suspend_reason, 'unpaid');
        await ok(variant, 'POST', svc('unsuspend'), id);
        await settle();
        await ok(variant, 'POST', svc('terminate'), id);
        await settle('terminated');
        assert.ok((await ok(variant, 'GET', svc('details'), id)).terminated_at);
        const jobs = await ok(variant, 'GET', svc('jobs'), id);
        assert.ok(jobs.length > 10 && jobs.every((j: any) => j.finished_at !== null));
        const events = await ok(variant, 'GET', api('events'));
        assert.ok(events.some((e: any) => e.type === 'job.finished' && e.data.service_id === service_id));
        const hook = await ok(variant, 'POST', api('webhooks'), {}, { url: 'https://93.184.216.34/hook' });
        assert.equal((await ok(variant, 'GET', api('webhooks'))).length, 1);
        await ok(variant, 'POST', api('webhooks/{webhook_id}/delete'), { webhook_id: hook.webhook_id });

        // Errors: the error envelope of the variant, with a documented error_code.
        const refused = [
          await send(variant, 'GET', svc('details'), { service_id: NOBODY }),
          await send(variant, 'POST', api('service/create-order'), {}, { ...order, cpu: 'two' }),
          await send(variant, 'POST', svc('start'), id),
          await send(variant, 'GET', api('version'), {}, undefined, 'Bearer nonsense'),
        ];
        assert.deepEqual(
          refused.map((r) => r.status),
          [404, 400, 400, 401],
        );
      });
    }

    test('the token endpoint and the server metadata, outside the envelopes', async () => {
      const c = await t.client();
      for (const [secret, status] of [
        [c.client_secret, 200],
        ['wrong', 401],
      ] as const) {
        const res = await t.app.inject({
          method: 'POST',
          url: `${BASE}/oauth/token`,
          payload: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: secret },
        });
        assert.equal(res.statusCode, status);
      }
      const metadata = await t.app.inject({
        method: 'GET',
        url: `/.well-known/oauth-authorization-server${BASE}`,
      });
      assert.equal(metadata.statusCode, 200);
    });

    test('every API operation of the document was answered 200 in both variants', () => {
      const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops as Record<string, { security?: unknown }>)
          .filter(([, op]) => op.security)
          .map(([method]) => `${method.toUpperCase()} ${path}`),
      );
      assert.ok(operations.length >= 25);
      const missed = operations
        .flatMap((op) => ['B', 'A'].map((v) => `${v} ${op}`))
        .filter((k) => !answered.has(k));
      assert.deepEqual(missed, []);
    });
  });
}
