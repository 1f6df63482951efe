/**
 * The drivers' one-call listing of a host's power states: libvirt's `virsh list --all` table
 * read into VM power states, and the simulated hypervisor's listing with the outside events
 * (domain powered off, started, removed) that tests use to play a person at the host.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import {
  parseBlockError,
  parseDiskErrorPaused,
  parseDomainList,
} from '../../src/drivers/libvirt/libvirt-driver.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { openStore } from '../../src/store/database.ts';
import { reachableHostIds } from '../../src/store/repos/hosts.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

const A = '0190aaaa-0000-7000-8000-000000000001';
const B = '0190aaaa-0000-7000-8000-000000000002';
const C = '0190aaaa-0000-7000-8000-000000000003';
const D = '0190aaaa-0000-7000-8000-000000000004';

test('virsh list --all: every state read, domains not ours left out', () => {
  const out = [
    ' Id   Name                                       State',
    '-----------------------------------------------------------',
    ` 3    vrp-${A}   running`,
    ` 7    vrp-${B}   paused`,
    ` -    vrp-${C}   shut off`,
    ` 9    vrp-${D}   in shutdown`,
    ' 4    someone-elses-vm                           running',
    ' -    vrp-crashed-one                            crashed',
    '',
  ].join('\n');
  assert.deepEqual(
    [...parseDomainList(out)],
    [
      [A, 'running'],
      [B, 'running'],
      [C, 'stopped'],
      [D, 'running'],
      ['crashed-one', 'stopped'],
    ],
  );
  assert.deepEqual([...parseDomainList(' Id   Name   State\n--------------------\n\n')], [], 'no domains');
});

test('virsh domstats --list-paused --state: the domains paused on an I/O error, and their disk error', () => {
  const out = [
    `Domain: 'vrp-${A}'`,
    '  state.state=3',
    '  state.reason=5',
    '',
    `Domain: 'vrp-${B}'`,
    '  state.state=3',
    '  state.reason=1',
    '',
    "Domain: 'someone-elses-vm'",
    '  state.state=3',
    '  state.reason=5',
    '',
    `Domain: 'vrp-${C}'`,
    '  state.state=3',
    '  state.reason=2',
    `Domain: 'vrp-${D}'`,
    '  state.state=3',
    '  state.reason=5',
    '',
  ].join('\n');
  // B paused by hand (user), C for a move (migration), the other domain not ours.
  assert.deepEqual(parseDiskErrorPaused(out), [A, D]);
  assert.deepEqual(parseDiskErrorPaused(''), [], 'none paused');
  assert.deepEqual(parseBlockError('vda: no space\n'), { disk: 'vda', error: 'no_space' });
  assert.deepEqual(parseBlockError('vdb: unspecified error\n'), { disk: 'vdb', error: 'io_error' });
  assert.equal(parseBlockError('No errors found\n'), undefined);
  assert.equal(parseBlockError(''), undefined);
});

const spec = (vmId: string) => ({
  vmId,
  hostname: 'h.example.com',
  username: 'root',
  password: 'Pass-word-1',
  templateId: 't',
  cpu: 1,
  ramGb: 1,
  diskGb: 10,
  ipCount: 1,
});

for (const kind of testStores()) {
  describe(`simulated hypervisor: power listing and outside events (${kind})`, () => {
    test('one listing per host tells every VM; outside power-off, power-on and removal show in it', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'vrp-power-'));
      const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
      const store = await openStore({ databaseUrl: pg?.url, dataDir });
      const driver = await createDriver(
        loadConfig({ VRP_DATA_DIR: dataDir, VRP_SIMULATED_SPEED: '0', VRP_SIM_HOSTS: 'h1:64:64:1000' }),
        store.db,
      );
      try {
        assert.deepEqual(
          await reachableHostIds(store.db, driver.name),
          ['h1'],
          'the setting seeded the store',
        );
        assert.deepEqual([...(await driver.powerStates('h1'))], [], 'no VMs yet');
        await driver.create(spec(A));
        await driver.create(spec(B));
        await driver.stop(B, { timeoutMs: 1000 });
        const listed = await driver.powerStates('h1');
        assert.equal(listed.get(A), 'running');
        assert.equal(listed.get(B), 'stopped');
        assert.equal(listed.size, 2);

        assert.ok(await outside.powerOff(store.db, A));
        assert.ok(await outside.powerOn(store.db, B));
        assert.deepEqual([...(await driver.powerStates('h1'))].sort(), [
          [A, 'stopped'],
          [B, 'running'],
        ]);
        const host = () =>
          store.db
            .selectFrom('hypervisor_hosts')
            .selectAll()
            .where('id', '=', 'h1')
            .executeTakeFirstOrThrow();
        assert.equal((await host()).used_cpu, 2);
        assert.ok(await outside.vanish(store.db, A));
        assert.equal((await driver.powerStates('h1')).has(A), false);
        assert.equal(await driver.inspect(A), undefined);
        assert.equal((await host()).used_cpu, 1, 'its room on the host went with it');
        // The API's terminate of the vanished VM still succeeds (nothing to remove).
        await driver.destroy(A);
        assert.equal(await outside.powerOff(store.db, A), false, 'no such VM');
        assert.equal(await outside.powerOn(store.db, A), false);
        assert.equal(await outside.vanish(store.db, A), false);
        assert.equal((await driver.powerStates('elsewhere')).size, 0, 'a host without VMs of ours');
      } finally {
        await driver.close();
        await store.close();
        await pg?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
