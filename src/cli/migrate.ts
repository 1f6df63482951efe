import type { Config } from '../config.ts';
import { createStore, openAndMigrate } from '../store/database.ts';
import { migrationsAhead, pendingMigrations } from '../store/migrate.ts';
import { CommandError, type Output, UsageError } from './output.ts';

/** `vrp migrate --check`'s exit status when some migration is pending (docs/cli.md). */
export const MIGRATIONS_PENDING_EXIT = 10;

/**
 * `vrp migrate`: applies the migrations the store lacks and names them. `vrp migrate --check`
 * applies nothing: it names the pending ones and answers MIGRATIONS_PENDING_EXIT if there are any.
 */
export async function migrateCommand(config: Config, args: readonly string[], out: Output): Promise<number> {
  const check = args.includes('--check');
  const unexpected = args.filter((a) => a !== '--check');
  if (unexpected.length > 0) {
    throw new UsageError(`migrate: unexpected arguments: ${unexpected.join(' ')}`);
  }
  if (check) return checkCommand(config, out);
  const { store, applied } = await openAndMigrate({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: 2,
  });
  try {
    out.result({ applied }, (v) =>
      v.applied.length ? `applied: ${v.applied.join(', ')}` : 'the schema is up to date',
    );
  } finally {
    await store.close();
  }
  return 0;
}

async function checkCommand(config: Config, out: Output): Promise<number> {
  const store = createStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  try {
    const pending = await pendingMigrations(store.db);
    const unknown = await migrationsAhead(store.db);
    if (unknown.length > 0) {
      throw new CommandError(
        `the store (${store.location}) was migrated by a newer version of vrp: ${unknown.join(', ')}`,
        { error_code: 'store_newer', unknown },
      );
    }
    out.result({ pending }, (v) =>
      v.pending.length ? `pending: ${v.pending.join(', ')}` : 'the schema is up to date',
    );
    return pending.length > 0 ? MIGRATIONS_PENDING_EXIT : 0;
  } finally {
    await store.close();
  }
}
