import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import type { ServiceState } from '../../src/domain/status-machine.ts';
import { unfinishedError } from '../../src/jobs/attempts.ts';
import { jobFromColumn } from '../../src/store/repos/jobs.ts';
import type { Database } from '../../src/store/schema.ts';

/**
 * Makes a queued job one queued again after an attempt that began, as recovery leaves a job
 * whose worker died after recording its start: attempt 1 counted, the state it started from
 * recorded (`from`: a new service's, unless given), the attempt's error. No worker need run.
 */
export async function queuedAgainAfterBegin(
  db: Kysely<Database>,
  jobId: string,
  from: ServiceState = { status: 'pending', resume: null },
): Promise<void> {
  const now = Date.now();
  const r = await db
    .updateTable('jobs')
    .set({ attempts: 1, started_at: now, error: unfinishedError(1), ...jobFromColumn(from) })
    .where('id', '=', jobId)
    .where('status', '=', 'queued')
    .executeTakeFirst();
  assert.equal(r.numUpdatedRows, 1n, `job ${jobId} is queued`);
}
