import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import ipaddr from 'ipaddr.js';
import { VrpError } from '../../client/src/index.ts';
import { sdkClient } from '../client/sdk.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { type PowerDns, startApiProxy, startPowerDns, waitForPtrRetry } from '../helpers/powerdns.ts';
import { testStores } from '../helpers/stores.ts';
import { missingTool } from '../helpers/tools.ts';

const A = { 'x-envelope-variant': 'A' };
const B = { 'x-envelope-variant': 'B' };
const PATTERN = 'ip-{ip}.rdns.example.net';

const skip = missingTool('pdns') || missingTool('dig');

/**
 * Gives the service an IPv6 prefix the operator's way: an IPv6 pool (`network`, one per store, so
 * the two runs never share a record) serves the service's host just while `POST
 * OPS/services/{id}/ipv6` runs, then a drained host of its own, so that the test's other services
 * get no IPv6 at create and their lists stay IPv4 only. Answers the service's IPv6 address.
 */
async function giveIpv6(t: TestApp, ops: string, serviceId: string, network: string): Promise<string> {
  const view = (await opsCall(t, ops, 'GET', `services/${serviceId}`)).body.data;
  const pools = (await opsCall(t, ops, 'GET', 'ip-pools')).body.data as { name: string; pool_id: string }[];
  let pool = pools.find((p) => p.name === 'rdns-v6')?.pool_id;
  if (pool === undefined) {
    const parking = await opsCall(t, ops, 'POST', 'hosts', {
      name: 'rdns-parking',
      driver: 'simulated',
      cpu: 1,
      ram_gb: 1,
      disk_gb: 1,
    });
    assert.equal(parking.status, 200, JSON.stringify(parking.body));
    assert.equal((await opsCall(t, ops, 'POST', `hosts/${parking.body.data.host_id}/drain`)).status, 200);
    const created = await opsCall(t, ops, 'POST', 'ip-pools', {
      name: 'rdns-v6',
      family: 'ipv6',
      network,
      host_ids: [view.host.host_id],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    pool = created.body.data.pool_id as string;
  } else {
    const bound = await opsCall(t, ops, 'PATCH', `ip-pools/${pool}`, { host_ids: [view.host.host_id] });
    assert.equal(bound.status, 200, JSON.stringify(bound.body));
  }
  const given = await opsCall(t, ops, 'POST', `services/${serviceId}/ipv6`);
  assert.equal(given.status, 200, JSON.stringify(given.body));
  const hosts = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items as {
    name: string;
    host_id: string;
  }[];
  const parked = hosts.find((h) => h.name === 'rdns-parking')!.host_id;
  assert.equal((await opsCall(t, ops, 'PATCH', `ip-pools/${pool}`, { host_ids: [parked] })).status, 200);
  return given.body.data.address as string;
}

describe('reverse DNS on PowerDNS', { skip }, () => {
  let pdns: PowerDns;
  before(async () => {
    pdns = await startPowerDns();
  });
  after(() => pdns?.close());

  for (const [i, store] of testStores().entries()) {
    // Each store's services get addresses of their own, so the two runs never share a record.
    const pool = `10.${90 + i}.7.0/24`;
    const v6Network = `2001:db8:40${i}0::/48`;

    describe(`reverse DNS (${store})`, () => {
      let t: TestApp;
      let token: string;
      let other: string;
      let ops: string;
      let proxy: Awaited<ReturnType<typeof startApiProxy>>;

      before(async () => {
        proxy = await startApiProxy(pdns.apiUrl);
        t = await createTestApp(
          {
            VRP_SIM_IP_POOL: pool,
            VRP_PDNS_API_URL: proxy.url,
            VRP_PDNS_API_KEY: pdns.apiKey,
            VRP_RDNS_DEFAULT: PATTERN,
            VRP_RDNS_NAMESERVERS: 'ns1.example.net,ns2.example.net',
            VRP_JOB_RETRY_BASE: '20ms',
          },
          { worker: true, store },
        );
        token = await t.token({ reseller: 'acme' });
        other = await t.token({ reseller: 'globex' });
        ops = await operatorToken(t);
      });
      after(async () => {
        await t?.close();
        await proxy?.close();
      });

      const getRdns = (id: string, headers = B, tok = token) =>
        call(t, tok, 'GET', `service/${id}/rdns`, undefined, headers);
      const setRdns = (id: string, body: unknown, headers = B, tok = token) =>
        call(t, tok, 'POST', `service/${id}/rdns`, body, headers);
      const primaryIp = async (id: string): Promise<string> =>
        (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data.ips[0];
      const defaultOf = (ip: string) =>
        `ip-${(ip.includes(':') ? ipaddr.parse(ip).toNormalizedString() : ip).replace(/[.:]/g, '-')}.rdns.example.net`;

      test('a new service has the default PTR in DNS; a PTR set answers dig -x, GET and the audit log show it; null goes back to the default', async () => {
        const id = await orderRunning(t, token, 'rdns1.example.com');
        const ip = await primaryIp(id);
        assert.match(ip, /^10\.9\d\.7\.\d+$/);
        const got = await getRdns(id);
        assert.equal(got.status, 200, JSON.stringify(got.body));
        assert.deepEqual(got.body.data, [{ ip, ptr: defaultOf(ip) }]);
        assert.deepEqual(
          await pdns.digUntil(ip, defaultOf(ip)),
          [defaultOf(ip)],
          'written when it was created',
        );

        const set = await setRdns(id, { ip, ptr: 'Mail.Example.com.' });
        assert.equal(set.status, 200, JSON.stringify(set.body));
        assert.deepEqual(set.body.data, [{ ip, ptr: 'mail.example.com' }]);
        assert.deepEqual(await pdns.digUntil(ip, 'mail.example.com'), ['mail.example.com']);
        assert.deepEqual((await getRdns(id)).body.data, [{ ip, ptr: 'mail.example.com' }]);

        // Variant A: the same, in its envelope, with service_id in the body.
        const a = await setRdns(id, { service_id: id, ip, ptr: 'smtp.example.com' }, A);
        assert.equal(a.status, 200, JSON.stringify(a.body));
        assert.equal(a.body.success, 'true');
        assert.deepEqual(JSON.parse(a.body.data), [{ ip, ptr: 'smtp.example.com' }]);
        assert.deepEqual(JSON.parse((await getRdns(id, A)).body.data), [{ ip, ptr: 'smtp.example.com' }]);
        assert.deepEqual(await pdns.digUntil(ip, 'smtp.example.com'), ['smtp.example.com']);

        const reset = await setRdns(id, { ip, ptr: null });
        assert.equal(reset.status, 200, JSON.stringify(reset.body));
        assert.deepEqual(reset.body.data, [{ ip, ptr: defaultOf(ip) }]);
        assert.deepEqual(await pdns.digUntil(ip, defaultOf(ip)), [defaultOf(ip)]);

        const audit = (await opsCall(t, ops, 'GET', `audit?service_id=${id}`)).body.data.items as any[];
        assert.equal(audit.filter((e) => e.action === 'service.set_rdns' && e.outcome === 'ok').length, 3);
      });

      test('the IPv6 address: its PTR in the pool’s ip6.arpa zone answers dig -x', async () => {
        const id = await orderRunning(t, token, 'rdns6.example.com');
        const ip = await primaryIp(id);
        const v6 = await giveIpv6(t, ops, id, v6Network);
        assert.deepEqual((await getRdns(id)).body.data, [
          { ip, ptr: defaultOf(ip) },
          { ip: v6, ptr: defaultOf(v6) },
        ]);
        // Any spelling of the address names it.
        const longForm = ipaddr.IPv6.parse(v6)
          .toNormalizedString()
          .split(':')
          .map((g) => g.padStart(4, '0'))
          .join(':');
        const set = await setRdns(id, { ip: longForm, ptr: 'v6.example.com' });
        assert.equal(set.status, 200, JSON.stringify(set.body));
        assert.deepEqual(set.body.data[1], { ip: v6, ptr: 'v6.example.com' });
        assert.deepEqual(await pdns.digUntil(v6, 'v6.example.com'), ['v6.example.com']);
        const zone = await fetch(
          `${pdns.apiUrl}/api/v1/servers/localhost/zones/0.${i}.0.4.8.b.d.0.1.0.0.2.ip6.arpa.`,
          {
            headers: { 'X-API-Key': pdns.apiKey },
          },
        );
        assert.equal(zone.status, 200, 'the zone is the /48 pool’s');
        const ns = ((await zone.json()) as any).rrsets.find((r: any) => r.type === 'NS');
        assert.deepEqual(ns.records.map((r: any) => r.content).sort(), [
          'ns1.example.net.',
          'ns2.example.net.',
        ]);
      });

      test('bad input: an address not the service’s, a ptr that is not a host name, another reseller’s service', async () => {
        const id = await orderRunning(t, token, 'rdns-bad.example.com');
        const theirs = await orderRunning(t, other, 'rdns-theirs.example.com');
        const ip = await primaryIp(id);
        const theirIp = (await call(t, other, 'GET', `service/${theirs}/details`, undefined, B)).body.data
          .ips[0];
        for (const wrong of [theirIp, '10.255.255.1', 'not-an-ip', '2001:db8::1', '']) {
          const res = await setRdns(id, { ip: wrong, ptr: 'x.example.com' });
          assert.equal(res.status, 400, `${wrong}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.error_code, 'ip_not_of_service', wrong);
        }
        for (const bad of [
          'under_score.example.com',
          'a..b',
          '-lead.example.com',
          `${'a'.repeat(64)}.com`,
          '',
          'sp ace.com',
        ]) {
          const res = await setRdns(id, { ip, ptr: bad });
          assert.equal(res.status, 400, `${bad}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.error_code, 'invalid_ptr', bad);
        }
        const missing = await setRdns(id, { ip });
        assert.equal(missing.status, 400);
        assert.equal(missing.body.error_code, 'validation_failed');
        assert.deepEqual((await getRdns(id)).body.data, [{ ip, ptr: defaultOf(ip) }], 'nothing changed');
        assert.deepEqual(await pdns.digUntil(ip, defaultOf(ip)), [defaultOf(ip)]);

        // Another reseller's service is as good as none, for reading and for setting.
        for (const res of [
          await getRdns(theirs),
          await setRdns(theirs, { ip: theirIp, ptr: 'x.example.com' }),
        ]) {
          assert.equal(res.status, 404, JSON.stringify(res.body));
          assert.equal(res.body.error_code, 'service_not_found');
        }
        assert.deepEqual(await pdns.digUntil(theirIp, defaultOf(theirIp)), [defaultOf(theirIp)]);
      });

      test('a DNS API that fails or does not answer: 502 rdns_backend_failed, and the PTR stays what it was', async () => {
        const id = await orderRunning(t, token, 'rdns-down.example.com');
        const ip = await primaryIp(id);
        assert.equal((await setRdns(id, { ip, ptr: 'before.example.com' })).status, 200);

        proxy.failing = true;
        try {
          for (const body of [
            { ip, ptr: 'after.example.com' },
            { ip, ptr: null },
          ]) {
            const res = await setRdns(id, body);
            assert.equal(res.status, 502, JSON.stringify(res.body));
            assert.equal(res.body.error_code, 'rdns_backend_failed');
          }
        } finally {
          proxy.failing = false;
        }
        assert.deepEqual((await getRdns(id)).body.data, [{ ip, ptr: 'before.example.com' }]);
        assert.deepEqual(await pdns.digUntil(ip, 'before.example.com'), ['before.example.com']);

        await pdns.stop();
        try {
          const res = await setRdns(id, { ip, ptr: 'after.example.com' });
          assert.equal(res.status, 502, JSON.stringify(res.body));
          assert.equal(res.body.error_code, 'rdns_backend_failed');
          assert.doesNotMatch(JSON.stringify(res.body), new RegExp(pdns.apiKey));
        } finally {
          await pdns.start();
        }
        assert.deepEqual((await getRdns(id)).body.data, [{ ip, ptr: 'before.example.com' }]);
        assert.deepEqual(await pdns.digUntil(ip, 'before.example.com'), ['before.example.com']);
      });

      test('the SDK reads and sets PTRs (getRdns, setRdns); its refusals are VrpErrors with the code', async () => {
        const vrp = await sdkClient(t, { reseller: 'acme' });
        const id = await orderRunning(t, token, 'rdns-sdk.example.com');
        const ip = await primaryIp(id);
        assert.deepEqual(await vrp.getRdns(id), [{ ip, ptr: defaultOf(ip) }]);
        assert.deepEqual(await vrp.setRdns(id, ip, 'sdk.example.com'), [{ ip, ptr: 'sdk.example.com' }]);
        assert.deepEqual(await pdns.digUntil(ip, 'sdk.example.com'), ['sdk.example.com']);
        await assert.rejects(
          vrp.setRdns(id, ip, 'not a name'),
          (e: unknown) => e instanceof VrpError && e.status === 400 && e.errorCode === 'invalid_ptr',
        );
        assert.deepEqual(await vrp.setRdns(id, ip, null), [{ ip, ptr: defaultOf(ip) }]);
      });

      test('the operator API reads and sets any reseller’s PTRs, recorded in the audit log as the operator’s', async () => {
        const id = await orderRunning(t, other, 'rdns-ops.example.com');
        const ip = (await call(t, other, 'GET', `service/${id}/details`, undefined, B)).body.data.ips[0];
        const got = await opsCall(t, ops, 'GET', `services/${id}/rdns`);
        assert.equal(got.status, 200, JSON.stringify(got.body));
        assert.deepEqual(got.body.data, [{ ip, ptr: defaultOf(ip) }]);
        const set = await opsCall(t, ops, 'POST', `services/${id}/rdns`, { ip, ptr: 'ops.example.com' });
        assert.equal(set.status, 200, JSON.stringify(set.body));
        assert.deepEqual(set.body.data, [{ ip, ptr: 'ops.example.com' }]);
        assert.deepEqual(await pdns.digUntil(ip, 'ops.example.com'), ['ops.example.com']);
        assert.deepEqual((await getRdns(id, B, other)).body.data, [{ ip, ptr: 'ops.example.com' }]);
        const bad = await opsCall(t, ops, 'POST', `services/${id}/rdns`, { ip, ptr: 'bad_name' });
        assert.equal(bad.body.error_code, 'invalid_ptr');
        const unknown = await opsCall(t, ops, 'GET', `services/${randomUUID()}/rdns`);
        assert.equal(unknown.status, 404);
        const audit = (await opsCall(t, ops, 'GET', `audit?service_id=${id}&actor=operator`)).body.data
          .items as any[];
        assert.deepEqual(
          audit
            .filter((e) => e.action === 'service.set_rdns')
            .map((e) => e.outcome)
            .sort(),
          ['invalid_ptr', 'ok'],
        );
      });

      test('terminate removes the PTR records (set and default, IPv4 and IPv6); a failing DNS API makes the job retry', async () => {
        const id = await orderRunning(t, token, 'rdns-term.example.com');
        const ip = await primaryIp(id);
        const v6 = await giveIpv6(t, ops, id, v6Network);
        assert.equal((await setRdns(id, { ip, ptr: 'gone.example.com' })).status, 200);
        assert.equal((await setRdns(id, { ip: v6, ptr: null })).status, 200);
        assert.deepEqual(await pdns.digUntil(ip, 'gone.example.com'), ['gone.example.com']);
        const v6Default = defaultOf(v6);
        assert.deepEqual(await pdns.digUntil(v6, v6Default), [v6Default]);

        proxy.failing = true;
        try {
          assert.equal((await call(t, token, 'POST', `service/${id}/terminate`)).status, 200);
          // The job meets the failure and is queued again, not failed.
          await waitForPtrRetry(t.ctx.store.db, id, 'terminate');
          assert.deepEqual(pdns.ptrOf(ip), ['gone.example.com'], 'nothing removed while the API fails');
        } finally {
          proxy.failing = false;
        }
        await waitForStatus(t, token, id, 'terminated');
        assert.deepEqual(await pdns.digUntil(ip, null), []);
        assert.deepEqual(await pdns.digUntil(v6, null), []);
        const rows = await t.ctx.store.db
          .selectFrom('service_ptrs')
          .selectAll()
          .where('service_id', '=', id)
          .execute();
        assert.deepEqual(rows, []);
        const after = await setRdns(id, { ip, ptr: 'back.example.com' });
        assert.equal(after.status, 400);
        assert.equal(after.body.error_code, 'invalid_state');
      });
    });
  }

  test('without a default pattern a PTR reset is no record at all', async () => {
    const t = await createTestApp(
      { VRP_SIM_IP_POOL: '10.94.7.0/24', VRP_PDNS_API_URL: pdns.apiUrl, VRP_PDNS_API_KEY: pdns.apiKey },
      { worker: true },
    );
    try {
      const token = await t.token();
      const id = await orderRunning(t, token, 'rdns-nodefault.example.com');
      const ip = (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data.ips[0];
      assert.deepEqual((await call(t, token, 'GET', `service/${id}/rdns`, undefined, B)).body.data, [
        { ip, ptr: null },
      ]);
      assert.deepEqual(pdns.ptrOf(ip), []);
      const set = await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr: 'only.example.com' }, B);
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(await pdns.digUntil(ip, 'only.example.com'), ['only.example.com']);
      const reset = await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr: null }, B);
      assert.deepEqual(reset.body.data, [{ ip, ptr: null }]);
      assert.deepEqual(await pdns.digUntil(ip, null), []);
    } finally {
      await t.close();
    }
  });
});

test('without PowerDNS configured: 400 rdns_unavailable, on both doors', async () => {
  const t = await createTestApp({}, { worker: true });
  try {
    const token = await t.token();
    const ops = await operatorToken(t);
    const id = await orderRunning(t, token, 'rdns-off.example.com');
    const ip = (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data.ips[0];
    for (const res of [
      await call(t, token, 'GET', `service/${id}/rdns`, undefined, B),
      await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr: 'x.example.com' }, B),
      await call(t, token, 'POST', `service/${id}/rdns`, { service_id: id, ip, ptr: null }, A),
      await opsCall(t, ops, 'GET', `services/${id}/rdns`),
    ]) {
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error_code, 'rdns_unavailable');
    }
    // The terminate of a service needs no DNS server when none is configured.
    assert.equal((await call(t, token, 'POST', `service/${id}/terminate`)).status, 200);
    await waitForStatus(t, token, id, 'terminated');
  } finally {
    await t.close();
  }
});
