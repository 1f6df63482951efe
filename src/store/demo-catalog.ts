import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
// Placeholder replaced by the catalogue module.
export async function seedDemoCatalog(_db: Kysely<Database>, _now: number): Promise<boolean> {
  return false;
}
