/**
 * Events and webhooks for the store's tests of recording events and queueing their deliveries
 * (test/store/event-deliveries.test.ts, test/store/gated-write.test.ts).
 */
import type { Kysely } from 'kysely';
import type { NewEvent } from '../../src/domain/events.ts';
import { insertWebhook } from '../../src/store/repos/webhooks.ts';
import type { Database } from '../../src/store/schema.ts';

/** A job's end. */
export const finished: NewEvent = {
  type: 'job.finished',
  data: { job_id: 'j', service_id: 's', action: 'stop', status: 'succeeded', error: null },
};

/** A service's status change. */
export const changed: NewEvent = {
  type: 'service.status_changed',
  data: { service_id: 's', from: 'running', to: 'stopping', job_id: 'j' },
};

/** A webhook `id` of `resellerId` that wants `eventTypes` (all when null). */
export const webhookOf =
  (db: Kysely<Database>, now: number) =>
  (id: string, resellerId: string, eventTypes: NewEvent['type'][] | null) =>
    insertWebhook(db, { id, resellerId, url: `https://${id}.example.com/`, eventTypes, secretEnc: 'x', now });
