/**
 * A `ptr` of any length that is not a host name is 400 `invalid_ptr`, and an `ip` of any length
 * that is not the service's is 400 `ip_not_of_service` (docs/api.md#reverse-dns),
 * one rule in one place: before, the request schema capped it at 300 characters and answered a
 * longer one 400 `validation_failed`. The check comes before the DNS server is written, so this
 * runs without PowerDNS: the provider's DNS API is a stand-in that records what reaches it and
 * answers 500 (a `ptr` that passes the check gets 502 `rdns_backend_failed` from it).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, orderRunning, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

/** A DNS API that fails every request, and the requests it got. */
async function failingDnsApi() {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"down"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A host name of exactly `length` characters (labels of 63, dots between). */
function hostnameOf(length: number): string {
  const labels: string[] = [];
  let left = length;
  while (left > 0) {
    const n = Math.min(63, left);
    labels.push('a'.repeat(n));
    left -= n + 1;
  }
  const name = labels.join('.');
  assert.equal(name.length, length);
  return name;
}

for (const store of testStores()) {
  describe(`a ptr too long to be a host name (${store})`, () => {
    let t: TestApp;
    let token: string;
    let dns: Awaited<ReturnType<typeof failingDnsApi>>;
    let id: string;
    let ip: string;

    before(async () => {
      dns = await failingDnsApi();
      t = await createTestApp(
        { VRP_PDNS_API_URL: dns.url, VRP_PDNS_API_KEY: 'test-key' },
        { worker: true, store },
      );
      token = await t.token();
      id = await orderRunning(t, token, 'rdns-long.example.com');
      ip = (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data.ips[0];
    });
    after(async () => {
      await t?.close();
      await dns?.close();
    });

    test('any length past 253 characters is 400 invalid_ptr, and nothing reaches the DNS server', async () => {
      // The create job wrote the new address's record (best effort, the stand-in refused it).
      dns.requests.length = 0;
      for (const ptr of [
        hostnameOf(254),
        `${hostnameOf(253)}.x`,
        'a'.repeat(300),
        'a'.repeat(301),
        `${'abc.'.repeat(1000)}com`,
        'a'.repeat(100_000),
      ]) {
        const res = await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr }, B);
        assert.equal(res.status, 400, `${ptr.length}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error_code, 'invalid_ptr', `${ptr.length}: ${res.body.message}`);
        assert.match(res.body.message, /^ptr must be a host name/);
      }
      // Variant A is told the same.
      const a = await call(
        t,
        token,
        'POST',
        `service/${id}/rdns`,
        { service_id: id, ip, ptr: 'a'.repeat(5000) },
        { 'x-envelope-variant': 'A' },
      );
      assert.equal(a.status, 400, JSON.stringify(a.body));
      assert.equal(a.body.error_code, 'invalid_ptr');
      assert.deepEqual(dns.requests, [], 'refused before the DNS server is written');
    });

    test('an ip of any length that is not one of the service’s addresses is 400 ip_not_of_service, its message short', async () => {
      dns.requests.length = 0;
      for (const other of [
        '192.0.2.250',
        ` ${ip} x`,
        '1'.repeat(65),
        `${ip}${' '.repeat(100)}`,
        '9'.repeat(100_000),
      ]) {
        const res = await call(
          t,
          token,
          'POST',
          `service/${id}/rdns`,
          { ip: other, ptr: 'host.example.com' },
          B,
        );
        assert.equal(res.status, 400, `${other.length}: ${JSON.stringify(res.body).slice(0, 200)}`);
        assert.equal(res.body.error_code, 'ip_not_of_service', `${other.length}`);
        assert.ok(res.body.message.length < 120, `a short message: ${res.body.message.length} characters`);
      }
      assert.deepEqual(dns.requests, [], 'refused before the DNS server is written');
    });

    test('253 characters (254 with the final dot) pass the check and go to the DNS server; a missing ptr is validation_failed', async () => {
      for (const ptr of [hostnameOf(253), `${hostnameOf(253)}.`]) {
        const res = await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr }, B);
        assert.equal(res.status, 502, JSON.stringify(res.body));
        assert.equal(res.body.error_code, 'rdns_backend_failed');
      }
      assert.ok(dns.requests.length > 0, 'the DNS server was asked');
      const missing = await call(t, token, 'POST', `service/${id}/rdns`, { ip }, B);
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error_code, 'validation_failed');
    });
  });
}
