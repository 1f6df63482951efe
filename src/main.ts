import type { FastifyBaseLogger } from 'fastify';
import { type DestinationStream, pino } from 'pino';
import { type Config, loadConfig } from './config.ts';
import { type AppContext, createContext } from './context.ts';
import { messageOf } from './domain/errors.ts';
import { LOG_REDACT } from './domain/log-redaction.ts';
import { createDriver, type DriverLog } from './drivers/create-driver.ts';
import { ExpectedFailure, reportFailure, systemCause } from './expected-failure.ts';
import type { App } from './http/app.ts';
import { type Background, startBackground } from './jobs/background.ts';
import { logDestination } from './log-destination.ts';
import { exitOnSignals } from './shutdown.ts';
import { checkBuildIsCurrent } from './source-digest.ts';
import { seedDemoCatalog } from './store/demo-catalog.ts';
import { migrationsAhead } from './store/migrate.ts';

/**
 * Runs the server until SIGTERM/SIGINT: store, HTTP API (unless worker-only), and the worker
 * (unless API-only). Shutdown stops taking requests, lets running jobs finish, closes the store.
 */
export async function serve(config: Config): Promise<void> {
  const ctx: AppContext = await createContext(config);
  if (config.demo && (await seedDemoCatalog(ctx.store.db, Date.now()))) {
    console.error('vrp: a fresh store: the demo catalogue was loaded (VRP_DEMO=0 to skip)');
  }
  // The driver first: the HTTP app bridges a service's console in the browser to it. It logs
  // through the process's logger; what it says before that exists is logged once it does.
  let ready: DriverLog | undefined;
  const early: [level: 'info' | 'debug' | 'warn' | 'error', obj: object, msg: string][] = [];
  const log: DriverLog = {
    info: (obj, msg) => (ready ? ready.info(obj, msg) : early.push(['info', obj, msg])),
    debug: (obj, msg) => (ready ? ready.debug(obj, msg) : early.push(['debug', obj, msg])),
    warn: (obj, msg) => (ready ? ready.warn(obj, msg) : early.push(['warn', obj, msg])),
    error: (obj, msg) => (ready ? ready.error(obj, msg) : early.push(['error', obj, msg])),
  };
  const driver = await createDriver(config, ctx.store.db, log);
  // Log lines go to standard output asynchronously: a request does not wait for the write of its
  // access line (the lines of one turn of the event loop go out together, and those written while
  // one write is under way in the next); what is still buffered when the process exits is written
  // before it does, in order when the shutdown below waits for it (log-destination.ts).
  const stream = logDestination(1);
  // A worker-only process answers no HTTP, so it neither loads nor builds the app: compiling its
  // routes' schemas held up its first job by seconds (bench/FINDINGS.md, "A worker process
  // starts"). It logs through a logger of its own, redacted as the app's is.
  let app: App | undefined;
  if (config.workerMode !== 'worker') {
    const { buildApp } = await import('./http/app.ts');
    app = buildApp(ctx, { consoles: driver, logger: { stream } });
  }
  const processLog: FastifyBaseLogger = app?.log ?? workerLogger(config.logLevel, stream);
  ready = processLog;
  for (const [level, obj, msg] of early.splice(0)) processLog[level](obj, msg);
  const ahead = await migrationsAhead(ctx.store.db);
  if (ahead.length > 0) {
    // A rolling upgrade under way: this (older) process serves beside the newer ones.
    processLog.warn(
      { migrations: ahead },
      'the store has migrations of a newer version of this program: running on it as it is; upgrade this process too',
    );
  }
  let background: Background | undefined;

  // Stop taking requests, let running jobs finish (25 s, then abort them), close the rest.
  exitOnSignals(
    () => [
      ...(app ? [{ name: 'http', run: () => app.close() }] : []),
      { name: 'jobs', run: async () => background?.stop(25_000) },
      { name: 'driver', run: () => driver.close() },
      { name: 'backup store', run: () => ctx.backupStore.close() },
      { name: 'store', run: () => ctx.store.close() },
      // Last: every line logged so far written, in order, before the process exits.
      { name: 'log', run: () => stream.drain() },
    ],
    processLog,
  );

  if (config.workerMode !== 'api') {
    background = startBackground(ctx, driver, processLog);
    checkBackupStore(ctx, processLog);
  }
  if (app) {
    try {
      await app.listen({ host: config.host, port: config.port });
    } catch (err) {
      const cause = systemCause(err);
      if (cause === undefined) throw err;
      throw new ExpectedFailure(
        `cannot listen on ${config.host}:${config.port} (VRP_HOST, VRP_PORT): ${cause}`,
        {
          cause: err,
        },
      );
    }
  } else {
    processLog.info('worker-only process: not listening');
  }
}

/** A worker-only process's logger: the app's level and redaction, without the app. */
export function workerLogger(level: Config['logLevel'], stream: DestinationStream): FastifyBaseLogger {
  return pino({ level, redact: LOG_REDACT }, stream);
}

/**
 * The backup store is asked once at start, without holding the start up: a store that does not
 * answer gets one line naming the setting (backup jobs retry, then fail with the store's words).
 */
function checkBackupStore(ctx: AppContext, log: { warn(obj: object, msg: string): void }): void {
  const store = ctx.backupStore;
  store.probe().catch((err: unknown) => {
    const why = messageOf(err);
    log.warn(
      { backup_store: store.description },
      `the backup store (VRP_BACKUP_STORE=${store.description}) does not answer: ${why}; backups fail until it does`,
    );
  });
}

if (import.meta.main) {
  try {
    checkBuildIsCurrent(import.meta.url);
    await serve(loadConfig());
  } catch (err) {
    process.exit(reportFailure(err));
  }
}
