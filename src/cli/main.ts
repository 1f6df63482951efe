import { type Config, ConfigError, loadConfig } from '../config.ts';
import { serve } from '../main.ts';
import { createStore } from '../store/database.ts';
import { migrateToLatest } from '../store/migrate.ts';
import { catalogCommand } from './catalog.ts';
import { clientCommand } from './clients.ts';
import { CommandError, createOutput, UsageError } from './output.ts';
import { resellerCommand } from './resellers.ts';

const USAGE = `usage: vrp <command> [--json]

  serve [--no-worker | --worker-only]   run the server (settings from VRP_* environment)
  migrate                               bring the store's schema up to date
  reseller create NAME | list | enable NAME | disable NAME
  client create --reseller NAME [--scopes access,products,service] [--variant A|B] [--name TEXT]
  client list [--reseller NAME]
  client rotate-secret ID | enable ID | disable ID | revoke-tokens ID
  catalog import FILE.json | export

--json prints machine-readable JSON on stdout. Settings: see docs/operations.md.`;

async function withStore<T>(
  config: Config,
  run: (db: ReturnType<typeof createStore>['db']) => Promise<T>,
): Promise<T> {
  const store = createStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    await migrateToLatest(store.db as never);
    return await run(store.db);
  } finally {
    await store.close();
  }
}

/** Runs one `vrp` command; returns the exit code. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  const out = createOutput(json);
  const [command, ...rest] = args;
  try {
    if (!command || command === 'help' || command === '--help' || command === '-h') {
      if (!command) throw new UsageError('a command is required');
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (command === 'serve') {
      const role = rest.includes('--no-worker')
        ? 'api'
        : rest.includes('--worker-only')
          ? 'worker'
          : undefined;
      const unknown = rest.filter((a) => a !== '--no-worker' && a !== '--worker-only');
      if (unknown.length > 0 || (rest.includes('--no-worker') && rest.includes('--worker-only'))) {
        throw new UsageError(`serve: unexpected arguments: ${rest.join(' ')}`);
      }
      await serve(loadConfig(role ? { ...env, VRP_ROLE: role } : env));
      return -1; // keeps running until a signal
    }
    const config = loadConfig(env);
    if (command === 'migrate') {
      if (rest.length > 0) throw new UsageError(`migrate: unexpected arguments: ${rest.join(' ')}`);
      const store = createStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
      try {
        const applied = await migrateToLatest(store.db as never);
        out.result({ applied }, (v) =>
          v.applied.length ? `applied: ${v.applied.join(', ')}` : 'the schema is up to date',
        );
      } finally {
        await store.close();
      }
      return 0;
    }
    if (command === 'reseller')
      return await withStore(config, (db) => resellerCommand(db, rest, out)).then(() => 0);
    if (command === 'client')
      return await withStore(config, (db) => clientCommand(db, rest, out)).then(() => 0);
    if (command === 'catalog')
      return await withStore(config, (db) => catalogCommand(db, rest, out)).then(() => 0);
    throw new UsageError(`unknown command: ${command}`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`vrp: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`vrp: ${err.message}\n`);
      return 2;
    }
    if (err instanceof CommandError) {
      if (json) process.stdout.write(`${JSON.stringify({ error: err.message })}\n`);
      process.stderr.write(`vrp: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`vrp: ${(err as Error)?.stack ?? String(err)}\n`);
    return 1;
  }
}

const code = await runCli(process.argv.slice(2));
if (code >= 0) process.exit(code);
