import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Why a service is `failed` (domain/service-error.ts): `services.error_code` and
 * `services.error_message`, set where the service becomes `failed` (the reconciler's
 * `vm_missing`, a create that failed for good) and cleared when a job leaves it otherwise.
 *
 * Services already `failed` get the reason their last change to `failed` told, where the events
 * still hold it (a `service.status_changed` to `failed`: its reason, or its job's error), else
 * their newest failed create job's error; else none is known and both stay null.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('services').addColumn('error_code', 'text').execute();
  await db.schema.alterTable('services').addColumn('error_message', 'text').execute();

  const failed = await sql<{ id: string }>`select id from services where status = 'failed'`.execute(db);
  if (failed.rows.length === 0) return;
  const wanted = new Set(failed.rows.map((r) => r.id));
  // One pass over the events that tell a change to failed; the newest per service wins.
  const events = await sql<{ data: string }>`
    select data from events where type = 'service.status_changed' and data like ${'%"to":"failed"%'}
    order by seq`.execute(db);
  const told = new Map<string, { job_id: string | null; reason?: string; message?: string }>();
  for (const e of events.rows) {
    const data: unknown = JSON.parse(e.data);
    if (typeof data !== 'object' || data === null) continue;
    const text = (key: string) => {
      const v = key in data ? Reflect.get(data, key) : undefined;
      return typeof v === 'string' ? v : undefined;
    };
    const serviceId = text('service_id');
    if (text('to') !== 'failed' || serviceId === undefined || !wanted.has(serviceId)) continue;
    told.set(serviceId, { job_id: text('job_id') ?? null, reason: text('reason'), message: text('message') });
  }
  for (const id of wanted) {
    const event = told.get(id);
    let reason: { code: string; message: string } | undefined;
    if (event && event.job_id === null && event.reason && event.message) {
      reason = { code: event.reason, message: event.message };
    } else {
      const job = await sql<{ error: string | null }>`
        select error from jobs where service_id = ${id} and action = 'create' and status = 'failed'
        ${event?.job_id ? sql`and id = ${event.job_id}` : sql``}
        order by seq desc limit 1`.execute(db);
      const error = job.rows[0]?.error;
      if (error) reason = { code: 'create_failed', message: error };
    }
    if (!reason) continue;
    await sql`update services set error_code = ${reason.code}, error_message = ${reason.message}
      where id = ${id}`.execute(db);
  }
}
