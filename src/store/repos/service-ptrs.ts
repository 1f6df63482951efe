import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** A PTR record set for one of a service's addresses. */
export interface ServicePtr {
  readonly address: string;
  readonly ptr: string;
  readonly zone: string;
}

/** The PTR records set for the service's addresses (those without one have the default). */
export async function listServicePtrs(db: Kysely<Database>, serviceId: string): Promise<ServicePtr[]> {
  return db
    .selectFrom('service_ptrs')
    .select(['address', 'ptr', 'zone'])
    .where('service_id', '=', serviceId)
    .orderBy('address')
    .execute();
}

/** Records `ptr` as the address's PTR record, replacing the one it had. */
export async function putServicePtr(
  db: Kysely<Database>,
  serviceId: string,
  record: ServicePtr,
  now: number,
): Promise<void> {
  await db
    .insertInto('service_ptrs')
    .values({ service_id: serviceId, ...record, updated_at: now })
    .onConflict((oc) =>
      oc
        .columns(['service_id', 'address'])
        .doUpdateSet({ ptr: record.ptr, zone: record.zone, updated_at: now }),
    )
    .execute();
}

/** Forgets the address's PTR record (it has the default again). */
export async function deleteServicePtr(
  db: Kysely<Database>,
  serviceId: string,
  address: string,
): Promise<void> {
  await db
    .deleteFrom('service_ptrs')
    .where('service_id', '=', serviceId)
    .where('address', '=', address)
    .execute();
}

/** Forgets every PTR record of the service. */
export async function deleteServicePtrs(db: Kysely<Database>, serviceId: string): Promise<void> {
  await db.deleteFrom('service_ptrs').where('service_id', '=', serviceId).execute();
}
