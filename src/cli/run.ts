import type { Kysely } from 'kysely';
import { type Config, loadConfig } from '../config.ts';
import { isStorableText, unstorableTextMessage } from '../domain/storable-text.ts';
import { reportFailure } from '../expected-failure.ts';
import { openStore } from '../store/database.ts';
import type { Database } from '../store/schema.ts';
import { dbCommand } from './db.ts';
import { migrateCommand } from './migrate.ts';
import { CommandError, createOutput, type Output, UsageError } from './output.ts';
import { serveCommand } from './serve.ts';

const USAGE = `usage: vrp <command> [--json]

  serve [--no-worker | --worker-only]   run the server (settings from VRP_* environment)
  migrate [--check]                     bring the store's schema up to date (--check: only say
                                        whether it is; exit 10 when a migration is pending)
  db backup FILE | db restore FILE      back up the store to FILE / restore it into an empty store
  reseller create NAME | list | enable NAME | disable NAME
  reseller update NAME (--billing-id ID | --clear-billing-id)
  reseller quota NAME [--services N] [--cpu N] [--ram N] [--hdd N] [--ip N] [--backup N] [--clear]
  client create --reseller NAME [--scopes access,products,service] [--variant A|B] [--name TEXT]
  client list [--reseller NAME]
  client rotate-secret ID | enable ID | disable ID | revoke-tokens ID
  operator create NAME [--role admin|support|billing] [--password-stdin] | list | disable NAME | enable NAME
  operator rotate-secret NAME | set-password NAME --password-stdin | set-role NAME ROLE
  operator reset-2fa NAME
  catalog import FILE.json | catalog import - | catalog export
  usage (--from ISO --to ISO | --period this_month|last_month) [--reseller NAME] [--csv [--per-service]]
  host list | show HOST | add NAME [--driver D] [--uri URI] --cpu N --ram GB --disk GB [--backup GB]
  host update HOST [--name NAME] [--uri URI] [--cpu N] [--ram GB] [--disk GB] [--backup GB]
  host drain HOST | activate HOST | evacuate HOST | remove HOST
  host migrate SERVICE_ID [--to HOST]
  ip-pool list | delete POOL
  ip-pool create NAME --family ipv4|ipv6 --network CIDR [--gateway A] [--first A] [--last A]
          [--reserved A,B] [--assign-prefix N] [--hosts H1,H2]
  ip-pool update POOL [--name NAME] [--gateway A] [--first A] [--last A] [--reserved A,B] [--hosts H1,H2]
  backup verify BACKUP_ID               read a backup back from the backup store (exit 1 if damaged)

--json prints machine-readable JSON on stdout. Settings: see docs/operations.md; commands: docs/cli.md.`;

type StoreCommand = (db: Kysely<Database>, args: string[], out: Output, config: Config) => Promise<void>;

/**
 * Each command's module, loaded when it runs: `serve` (a worker-only process above all) then
 * loads none of them, nor what they share with the HTTP layer (the operator API's views).
 */
const STORE_COMMANDS: Readonly<Record<string, () => Promise<StoreCommand>>> = {
  reseller: async () => (await import('./resellers.ts')).resellerCommand,
  client: async () => (await import('./clients.ts')).clientCommand,
  operator: async () => (await import('./operators.ts')).operatorCommand,
  catalog: async () => (await import('./catalog.ts')).catalogCommand,
  usage: async () => (await import('./usage.ts')).usageCommand,
  host: async () => (await import('./hosts.ts')).hostCommand,
  'ip-pool': async () => (await import('./ip-pools.ts')).ipPoolCommand,
  backup: async () => (await import('./backups.ts')).backupCommand,
};

/** Opens the store the settings name (migrated, as the server would), runs `run`, closes it. */
async function withStore(config: Config, run: (db: Kysely<Database>) => Promise<void>): Promise<void> {
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    await run(store.db);
  } finally {
    await store.close();
  }
}

/**
 * Runs one `vrp` command and returns the exit code: 0 done, 1 failed, 2 wrong arguments or a
 * bad setting. `serve` returns undefined: the server runs until a signal ends the process.
 */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<number | undefined> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  const out = createOutput(json);
  const [command, ...rest] = args;
  try {
    // Names and texts given here are stored as given: refuse what a store cannot hold.
    const unstorable = args.find((a) => !isStorableText(a));
    if (unstorable !== undefined) {
      throw new UsageError(`argument ${unstorableTextMessage(unstorable)}`);
    }
    if (command === 'help' || command === '--help' || command === '-h') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (!command) throw new UsageError('a command is required');
    if (command === 'serve') {
      await serveCommand(rest, env);
      return undefined;
    }
    const storeCommand = Object.hasOwn(STORE_COMMANDS, command)
      ? await STORE_COMMANDS[command]?.()
      : undefined;
    if (command !== 'migrate' && command !== 'db' && !storeCommand) {
      throw new UsageError(`unknown command: ${command}`);
    }
    const config = loadConfig(env);
    if (command === 'migrate') return await migrateCommand(config, rest, out);
    if (command === 'db') await dbCommand(config, rest, out);
    else if (storeCommand) await withStore(config, (db) => storeCommand(db, rest, out, config));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`vrp: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (err instanceof CommandError) {
      if (json) process.stdout.write(`${JSON.stringify({ error: err.message, ...err.details })}\n`);
      process.stderr.write(`vrp: ${err.message}\n`);
      return 1;
    }
    return reportFailure(err);
  }
}
