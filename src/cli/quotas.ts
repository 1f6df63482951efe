import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import { MAX_QUOTA, QUOTA_RESOURCES, type Quota, type QuotaUse, UNLIMITED } from '../domain/quotas.ts';
import { findQuota, quotaUse, setQuota } from '../store/repos/quotas.ts';
import { findResellerByName } from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, type Output, parseArguments, UsageError } from './output.ts';

/** A cap: a whole number, or `unlimited` to lift it. */
const CAP = /^[0-9]{1,10}$/;

/**
 * `vrp reseller quota NAME [--services N] [--cpu N] [--ram N] [--hdd N] [--ip N] [--backup N] [--clear]`:
 * changes the caps given (N, or `unlimited`), keeps the others; `--clear` lifts them all; with
 * neither, shows the quota. Prints the quota and the use after the change.
 */
export async function resellerQuotaCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  const { values, positionals } = parseArguments(() => parse(args));
  const [name, ...extra] = positionals;
  if (!name) throw new UsageError('reseller quota: a NAME is required');
  if (extra.length > 0) throw new UsageError(`reseller quota: unexpected arguments: ${extra.join(' ')}`);
  const changes: Partial<Record<keyof Quota, number | null>> = {};
  for (const r of QUOTA_RESOURCES) {
    const v = values[r];
    if (v === undefined) continue;
    if (v === 'unlimited') changes[r] = null;
    else if (CAP.test(v) && Number(v) <= MAX_QUOTA) changes[r] = Number(v);
    else
      throw new UsageError(
        `reseller quota: --${r} is a whole number (0 to ${MAX_QUOTA}) or "unlimited", got "${v}"`,
      );
  }
  const changing = Object.keys(changes).length > 0;
  if (values.clear && changing) throw new UsageError('reseller quota: --clear takes no other caps');

  const reseller = await findResellerByName(db, name);
  if (!reseller) throw new CommandError(`no reseller named "${name}"`);
  if (values.clear || changing) {
    const quota = values.clear
      ? UNLIMITED
      : { ...((await findQuota(db, reseller.id)) ?? UNLIMITED), ...changes };
    await setQuota(db, reseller.id, quota, Date.now(), cliAudit('reseller.quota'));
  }
  const quota = (await findQuota(db, reseller.id)) ?? UNLIMITED;
  const use = await quotaUse(db, reseller.id);
  out.result({ reseller: reseller.name, quota, use }, human);
}

function parse(args: string[]) {
  const caps = Object.fromEntries(QUOTA_RESOURCES.map((r) => [r, { type: 'string' as const }])) as Record<
    (typeof QUOTA_RESOURCES)[number],
    { type: 'string' }
  >;
  return parseArgs({ args, options: { ...caps, clear: { type: 'boolean' } }, allowPositionals: true });
}

function human(v: { reseller: string; quota: Quota; use: QuotaUse }): string {
  const lines = QUOTA_RESOURCES.map((r) => `${r}\t${v.quota[r] ?? 'unlimited'}\t${v.use[r]}`);
  return [`quota of reseller "${v.reseller}" (resource, quota, use)`, ...lines].join('\n');
}
