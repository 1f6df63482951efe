/**
 * The drivers' side of traffic accounting: libvirt's `virsh domstats --interface` and
 * `virsh domiflist` output read into counters and interfaces, the rate `domiftune` is given; the
 * simulated driver's counters growing with VRP_SIM_TRAFFIC_RATE on its own clock, starting again
 * at a boot, absent while stopped, and its bandwidth limit visible.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { seedHosts } from '../../src/drivers/hosts.ts';
import { createIpPool } from '../../src/drivers/ip-pool.ts';
import {
  kilobytesPerSecond,
  parseInterfaceMacs,
  parseInterfaceStats,
} from '../../src/drivers/libvirt/libvirt-driver.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createSimulatedDriver } from '../../src/drivers/simulated/simulated-driver.ts';
import { openStore } from '../../src/store/database.ts';

/** `virsh -c qemu:///system domstats --list-active --interface` with two of ours and one other domain. */
const DOMSTATS = `Domain: 'vrp-0193b1a2-7c1d-7e00-a375-7d55a26c15f0'
  net.count=2
  net.0.name=vnet12
  net.0.rx.bytes=123456789012
  net.0.rx.pkts=91234
  net.0.rx.errs=0
  net.0.rx.drop=0
  net.0.tx.bytes=2345678
  net.0.tx.pkts=12034
  net.0.tx.errs=0
  net.0.tx.drop=0
  net.1.name=vnet13
  net.1.rx.bytes=1000
  net.1.rx.pkts=10
  net.1.rx.errs=0
  net.1.rx.drop=0
  net.1.tx.bytes=22
  net.1.tx.pkts=1
  net.1.tx.errs=0
  net.1.tx.drop=0

Domain: 'someone-elses'
  net.count=1
  net.0.name=vnet2
  net.0.rx.bytes=5
  net.0.tx.bytes=5

Domain: 'vrp-0193b1a2-7c1d-7e00-a375-000000000002'
  net.count=0

`;

const DOMIFLIST = ` Interface   Type     Source   Model    MAC
-----------------------------------------------------------
 vnet12      bridge   br0      virtio   52:54:00:6B:3c:58
 -           bridge   br1      virtio   52:54:00:aa:bb:cc
`;

test('domstats: rx is traffic in, tx out, summed over interfaces; the session is the interface names; other domains left out', () => {
  const counters = parseInterfaceStats(DOMSTATS);
  assert.deepEqual(
    [...counters],
    [
      [
        '0193b1a2-7c1d-7e00-a375-7d55a26c15f0',
        { inBytes: 123456790012, outBytes: 2345700, session: 'vnet12,vnet13' },
      ],
      ['0193b1a2-7c1d-7e00-a375-000000000002', { inBytes: 0, outBytes: 0, session: '' }],
    ],
  );
  assert.deepEqual([...parseInterfaceStats('')], []);
});

test('domiflist: the MAC of every interface, running or not; domiftune gets kilobytes (1000 bytes) per second', () => {
  assert.deepEqual(parseInterfaceMacs(DOMIFLIST), ['52:54:00:6b:3c:58', '52:54:00:aa:bb:cc']);
  assert.equal(kilobytesPerSecond(10), 1250);
  assert.equal(kilobytesPerSecond(1000), 125_000);
});

describe('simulated counters', () => {
  test('grow at the rate while the VM runs, start again at a boot, are absent while it is stopped; the limit shows', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-traffic-'));
    const store = await openStore({ databaseUrl: undefined, dataDir });
    let now = Date.UTC(2026, 2, 15);
    const clock = () => now;
    await seedHosts(store.db, 'simulated', [{ id: 'h1', cpu: 8, ramGb: 32, diskGb: 500 }], now);
    const driver = createSimulatedDriver({
      db: store.db,
      ipPool: await createIpPool(store.db, '10.81.0.0/28', clock),
      faults: { transient: 0, permanent: 0 },
      speed: 0,
      trafficRate: { inPerSecond: 1000, outPerSecond: 10 },
      now: clock,
    });
    try {
      const vm = await driver.create({
        vmId: 'vm-1',
        hostname: 'a.example.com',
        username: 'root',
        password: 'pw-123456789',
        templateId: 't',
        cpu: 1,
        ramGb: 1,
        diskGb: 10,
        ipCount: 1,
      });
      const counters = async () => (await driver.interfaceCounters(vm.hostId)).get('vm-1');
      const first = await counters();
      assert.deepEqual([first?.inBytes, first?.outBytes], [0, 0]);
      now += 60_000;
      const later = await counters();
      assert.deepEqual([later?.inBytes, later?.outBytes], [60_000, 600]);
      assert.equal(later?.session, first?.session);
      assert.ok(await outside.traffic(store.db, 'vm-1', 5, 7));
      now += 1000;
      const more = await counters();
      assert.deepEqual([more?.inBytes, more?.outBytes], [61_005, 617]);

      await driver.stop('vm-1', { timeoutMs: 0 });
      assert.equal(await counters(), undefined, 'a stopped VM has no interface');
      await driver.start('vm-1');
      const rebooted = await counters();
      assert.deepEqual([rebooted?.inBytes, rebooted?.outBytes], [0, 0]);
      assert.notEqual(rebooted?.session, first?.session);

      assert.equal((await driver.inspect('vm-1'))?.bandwidthMbit, null);
      await driver.setBandwidth('vm-1', 25);
      assert.equal((await driver.inspect('vm-1'))?.bandwidthMbit, 25);
      await driver.setBandwidth('vm-1', null);
      assert.equal((await driver.inspect('vm-1'))?.bandwidthMbit, null);
    } finally {
      await driver.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
