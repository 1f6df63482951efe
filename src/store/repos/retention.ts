import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/** What the pruner removes, and so what it counts, in the order it prunes them. */
export const PRUNE_KINDS = [
  'jobs',
  'scheduleSlots',
  'idempotencyKeys',
  'auditEntries',
  'events',
  'webhookDeliveries',
  'consoleSessions',
  'serviceConsoleLinks',
] as const;
export type PruneKind = (typeof PRUNE_KINDS)[number];

/** A number for each kind: rows removed, or the cutoff of each. */
export type PrunedCounts = Record<PruneKind, number>;

interface PruneRule {
  readonly table: keyof Database;
  /** The columns that name a row (its primary key). */
  readonly key: readonly string[];
  /** A row is old when this column is before the cutoff (`<`), or at or before it (`<=`). */
  readonly column: string;
  readonly op: '<' | '<=';
  /** A further condition a row must meet to go (SQL). */
  readonly only?: string;
}

/**
 * Each kind's table and its rule. The cutoff each is given: finished jobs and handled schedule
 * slots, the job retention ago (slots are long past any grace period by then); idempotency keys,
 * their 24 hours ago (IDEMPOTENCY_TTL_MS); audit entries and events, their own retention
 * ago; webhook deliveries, the events' retention ago (kept as long as their events, they are long
 * finished by then: the last retry comes about 28 hours after the event, events are kept at
 * least 7 days; this also takes those of deleted webhooks); console sessions, now (they expired);
 * links to a service's console, VRP_CONSOLE_SESSION_MAX ago (a link opens before its
 * `open_until`, so a session it opened has ended by then).
 */
const RULES: Readonly<Record<PruneKind, PruneRule>> = {
  // Only finished jobs go: a queued or running job has no finished_at.
  jobs: {
    table: 'jobs',
    key: ['id'],
    column: 'finished_at',
    op: '<',
    only: "status in ('succeeded', 'failed', 'skipped')",
  },
  scheduleSlots: { table: 'schedule_slots', key: ['schedule_id', 'slot_at'], column: 'created_at', op: '<' },
  idempotencyKeys: { table: 'idempotency_keys', key: ['reseller_id', 'key'], column: 'created_at', op: '<=' },
  auditEntries: { table: 'audit_log', key: ['id'], column: 'created_at', op: '<' },
  events: { table: 'events', key: ['id'], column: 'created_at', op: '<' },
  webhookDeliveries: {
    table: 'webhook_deliveries',
    key: ['webhook_id', 'event_id'],
    column: 'created_at',
    op: '<',
  },
  consoleSessions: { table: 'console_sessions', key: ['id'], column: 'expires_at', op: '<=' },
  serviceConsoleLinks: { table: 'service_console_links', key: ['id'], column: 'open_until', op: '<=' },
};

/**
 * Deletes at most `batch` old rows of `kind` (see RULES for what `cutoff` is to each), one
 * statement on both databases: the row keys of a limited select, deleted by key (neither
 * database deletes with a LIMIT of its own).
 */
export async function pruneBatch(
  db: Kysely<Database>,
  kind: PruneKind,
  cutoff: number,
  batch: number,
): Promise<number> {
  const rule = RULES[kind];
  const table = sql.table(rule.table);
  const key = sql.join(rule.key.map((k) => sql.ref(k)));
  const only = rule.only ? sql` and ${sql.raw(rule.only)}` : sql``;
  const r = await sql`delete from ${table} where (${key}) in (
    select ${key} from ${table} where ${sql.ref(rule.column)} ${sql.raw(rule.op)} ${cutoff}${only} limit ${batch}
  )`.execute(db);
  return Number(r.numAffectedRows ?? 0n);
}
