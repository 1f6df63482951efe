import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Live password resets through the QEMU guest agent:
 * - `jobs.result`: JSON of what a finished job reports beyond its status (a password reset:
 *   `{"password_applies": "now" | "next_boot"}`); null for jobs that report nothing.
 * - `services.password_applies`: whether the service's current password reached the running
 *   guest (`now`) or waits for its next boot (`next_boot`); null until a reset.
 * - `sim_vms.guest_agent`: whether a simulated guest runs an agent (1, as a real image with
 *   qemu-guest-agent) or not (0).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('result', 'text').execute();
  await db.schema.alterTable('services').addColumn('password_applies', 'text').execute();
  await db.schema
    .alterTable('sim_vms')
    .addColumn('guest_agent', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
}
