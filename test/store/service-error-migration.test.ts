/**
 * Migration 017 gives services the reason they are failed (`error_code`, `error_message`).
 * Services already failed before it get the reason their last change to failed told, where the
 * events still hold it, else their newest failed create job's error; the others get none.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateTo } from '../../src/store/migrate.ts';
import { insertOldJob, insertOldService, jobRowBefore029, serviceRowBefore017 } from '../helpers/old-rows.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

const GONE = 'The server no longer exists on its host: it was removed outside the API';

for (const kind of testStores()) {
  describe(`migration 017: a failed service's reason (${kind})`, () => {
    test('failed services get the reason their events or their failed create tell; the others none', async () => {
      const { store, done } = await storeAtMigration(kind, '016-job-retry');
      try {
        const { db } = store;
        const now = Date.now();
        await db
          .insertInto('resellers')
          .values({ id: 'r1', name: 'acme', enabled: 1, created_at: now })
          .execute();
        const service = async (id: string, status: 'failed' | 'running') => {
          const row = serviceRowBefore017({
            id,
            resellerId: 'r1',
            clientId: 'c1',
            productId: 'p1',
            templateId: 't1',
            domainName: `${id}.example.com`,
            username: 'root',
            passwordEnc: 'x',
            cpu: 1,
            ram: 1,
            hdd: 10,
            ipCount: 1,
            backup: 0,
            now,
          });
          await insertOldService(db, { ...row, status, projected_status: status });
        };
        const failedCreate = async (id: string, serviceId: string, seq: number, error: string) => {
          const row = jobRowBefore029({
            id,
            serviceId,
            resellerId: 'r1',
            action: 'create',
            params: {},
            seq,
            now,
          });
          await insertOldJob(db, { ...row, status: 'failed', error, finished_at: now });
        };
        const toFailed = async (id: string, data: Record<string, unknown>) => {
          await db
            .insertInto('events')
            .values({
              id,
              reseller_id: 'r1',
              type: 'service.status_changed',
              data: JSON.stringify({ to: 'failed', ...data }),
              created_at: now,
            })
            .execute();
        };
        // Gone from its host, after a create that had failed once and succeeded on the retry.
        await service('gone', 'failed');
        await failedCreate('j-gone', 'gone', 1, 'No host has room');
        await toFailed('e1', { service_id: 'gone', from: 'provisioning', job_id: 'j-gone' });
        await toFailed('e2', {
          service_id: 'gone',
          from: 'running',
          job_id: null,
          reason: 'vm_missing',
          message: GONE,
        });
        // Its create failed twice; the event names the second.
        await service('broken', 'failed');
        await failedCreate('j-b1', 'broken', 1, 'first failure');
        await failedCreate('j-b2', 'broken', 2, 'second failure');
        await toFailed('e3', { service_id: 'broken', from: 'provisioning', job_id: 'j-b2' });
        // Its events pruned: the newest failed create.
        await service('old', 'failed');
        await failedCreate('j-o1', 'old', 1, 'long ago');
        // Nothing tells: no reason.
        await service('unknown', 'failed');
        // Not failed: no reason, whatever its past.
        await service('fine', 'running');
        await failedCreate('j-f1', 'fine', 1, 'once');

        assert.deepEqual(await migrateTo(db as Kysely<unknown>, '017-service-error'), ['017-service-error']);

        const rows = await db
          .selectFrom('services')
          .select(['id', 'error_code', 'error_message'])
          .orderBy('id')
          .execute();
        assert.deepEqual(
          rows.map((r) => [r.id, r.error_code, r.error_message]),
          [
            ['broken', 'create_failed', 'second failure'],
            ['fine', null, null],
            ['gone', 'vm_missing', GONE],
            ['old', 'create_failed', 'long ago'],
            ['unknown', null, null],
          ],
        );
      } finally {
        await done();
      }
    });
  });
}
