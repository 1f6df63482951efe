import type { Config } from '../config.ts';
import { openAndMigrate } from '../store/database.ts';
import { type Output, positionals, UsageError } from './output.ts';

/** `vrp migrate`: applies the migrations the store lacks and names them. */
export async function migrateCommand(config: Config, args: readonly string[], out: Output): Promise<void> {
  if (positionals(args, 'migrate').length > 0) {
    throw new UsageError(`migrate: unexpected arguments: ${args.join(' ')}`);
  }
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
}
