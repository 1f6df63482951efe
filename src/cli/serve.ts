import { loadConfig } from '../config.ts';
import { UsageError } from './output.ts';

/** `vrp serve [--no-worker | --worker-only]`: runs until a signal stops it (main.ts owns shutdown). */
export async function serveCommand(args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const noWorker = args.includes('--no-worker');
  const workerOnly = args.includes('--worker-only');
  const unknown = args.filter((a) => a !== '--no-worker' && a !== '--worker-only');
  if (unknown.length > 0) throw new UsageError(`serve: unexpected arguments: ${unknown.join(' ')}`);
  if (noWorker && workerOnly) throw new UsageError('serve: --no-worker and --worker-only exclude each other');
  const role = noWorker ? 'api' : workerOnly ? 'worker' : undefined;
  const config = loadConfig(role ? { ...env, VRP_ROLE: role } : env);
  // Loaded here so that the other commands do not pay for the HTTP server and the drivers.
  const { serve } = await import('../main.ts');
  await serve(config);
}
