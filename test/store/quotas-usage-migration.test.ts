/**
 * Migration 007 on a store with services: those on a host get an open usage interval from the
 * time of the upgrade (usage was not recorded before); others get none.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { listServiceIntervals } from '../../src/store/repos/usage-intervals.ts';
import { insertOldService, serviceRowBefore012 } from '../helpers/old-rows.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  test(`migration 007 opens an interval for each service on a host, from now (${kind})`, async () => {
    const { store, done } = await storeAtMigration(kind, '005-job-from-state');
    try {
      const { db } = store;
      const created = Date.UTC(2025, 0, 1);
      await db
        .insertInto('resellers')
        .values({ id: 'r1', name: 'acme', enabled: 1, created_at: created })
        .execute();
      const service = (id: string, patch: Record<string, unknown>) =>
        insertOldService(db, {
          ...serviceRowBefore012({
            id,
            resellerId: 'r1',
            clientId: 'c1',
            productId: 'p1',
            templateId: 't1',
            domainName: `${id}.example.com`,
            username: 'root',
            passwordEnc: 'x',
            cpu: 2,
            ram: 4,
            hdd: 40,
            ipCount: 2,
            backup: 10,
            now: created,
          }),
          ...patch,
        });
      await service('running', { status: 'running', projected_status: 'running', host_id: 'h1' });
      await service('suspended', { status: 'suspended', projected_status: 'suspended', host_id: 'h1' });
      await service('pending', {});
      await service('gone', { status: 'terminated', projected_status: 'terminated', terminated_at: created });

      const before = Date.now();
      await migrateToLatest(db as Kysely<unknown>);
      const after = Date.now();

      const [running] = await listServiceIntervals(db, 'running');
      assert.ok(running);
      assert.deepEqual(
        { ...running, started_at: 0 },
        {
          id: 'running',
          service_id: 'running',
          reseller_id: 'r1',
          product_id: 'p1',
          cpu: 2,
          ram: 4,
          hdd: 40,
          ip: 2,
          backup: 10,
          suspended: 0,
          started_at: 0,
          ended_at: null,
        },
      );
      assert.ok(Number(running.started_at) >= before && Number(running.started_at) <= after);
      assert.equal((await listServiceIntervals(db, 'suspended'))[0]?.suspended, 1);
      assert.deepEqual(await listServiceIntervals(db, 'pending'), []);
      assert.deepEqual(await listServiceIntervals(db, 'gone'), []);
    } finally {
      await done();
    }
  });
}
