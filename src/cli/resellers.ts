import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import { billingIdProblem } from '../domain/billing-id.ts';
import { isResellerName } from '../domain/resellers.ts';
import { isUniqueViolation } from '../store/errors.ts';
import {
  createResellerRecorded,
  findResellerByName,
  listResellers,
  setResellerBillingIdRecorded,
  setResellerEnabledRecorded,
} from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, type Output, one, parseArguments, positionals, UsageError } from './output.ts';
import { resellerQuotaCommand } from './quotas.ts';

/** `vrp reseller create|list|enable|disable|update|quota`. */
export async function resellerCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  if (args[0] === 'quota') return resellerQuotaCommand(db, args.slice(1), out);
  if (args[0] === 'update') return resellerUpdateCommand(db, args.slice(1), out);
  const [sub, name, ...rest] = positionals(args, 'reseller');
  if (sub !== 'list' && sub !== 'create' && sub !== 'enable' && sub !== 'disable') {
    throw new UsageError(`unknown command: reseller ${sub ?? ''}`);
  }
  if (rest.length > 0 || (sub === 'list' && name !== undefined)) {
    throw new UsageError(`reseller ${sub}: unexpected arguments: ${[name, ...rest].join(' ')}`);
  }
  if (sub === 'list') {
    const list = await listResellers(db);
    out.result(
      list.map((r) => ({
        id: r.id,
        name: r.name,
        enabled: r.enabled,
        created_at: new Date(r.createdAt).toISOString(),
        external_billing_id: r.externalBillingId,
      })),
      (l) =>
        l.length === 0
          ? '(no resellers)'
          : l
              .map(
                (r) =>
                  `${r.name}\t${r.enabled ? 'enabled' : 'disabled'}\t${r.id}\t${r.external_billing_id ?? '-'}`,
              )
              .join('\n'),
    );
    return;
  }
  if (!name) throw new UsageError(`reseller ${sub}: a NAME is required`);
  if (sub === 'create') {
    if (!isResellerName(name))
      throw new CommandError(
        'a reseller name is 1-100 letters, digits, spaces, dots, underscores or hyphens, starting with a letter or digit',
      );
    if (await findResellerByName(db, name))
      throw new CommandError(`a reseller named "${name}" exists already`);
    const now = Date.now();
    const r = await createResellerRecorded(db, name, now, cliAudit('reseller.create')).catch(
      (err: unknown) => {
        // Another `vrp reseller create` of the same name won the race.
        if (isUniqueViolation(err)) throw new CommandError(`a reseller named "${name}" exists already`);
        throw err;
      },
    );
    out.result({ id: r.id, name: r.name }, (v) => `reseller "${v.name}" created (${v.id})`);
    return;
  }
  const now = Date.now();
  const r = await findResellerByName(db, name);
  const changed =
    r && (await setResellerEnabledRecorded(db, r.id, sub === 'enable', now, cliAudit(`reseller.${sub}`)));
  if (!changed) throw new CommandError(`no reseller named "${name}"`);
  out.result(
    { name, enabled: sub === 'enable' },
    (v) => `reseller "${v.name}" ${v.enabled ? 'enabled' : 'disabled'}`,
  );
}

/**
 * `vrp reseller update NAME (--billing-id ID | --clear-billing-id)`: sets or clears the
 * reseller's external billing id, checked as `PATCH OPS/resellers/{id}` checks it, and audited.
 */
async function resellerUpdateCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  const { values, positionals: rest } = parseArguments(() =>
    parseArgs({
      args,
      options: { 'billing-id': { type: 'string' }, 'clear-billing-id': { type: 'boolean' } },
      allowPositionals: true,
    }),
  );
  const name = one(rest, 'reseller update', 'NAME');
  const given = values['billing-id'];
  const clear = values['clear-billing-id'] === true;
  if ((given === undefined) === !clear) {
    throw new UsageError('reseller update: give --billing-id ID or --clear-billing-id');
  }
  if (given !== undefined) {
    const problem = billingIdProblem(given);
    if (problem !== undefined) throw new UsageError(`reseller update: --billing-id ${problem}`);
  }
  const r = await findResellerByName(db, name);
  const changed =
    r &&
    (await setResellerBillingIdRecorded(db, r.id, given ?? null, Date.now(), cliAudit('reseller.update')));
  if (!changed) throw new CommandError(`no reseller named "${name}"`);
  out.result({ name: changed.name, external_billing_id: changed.externalBillingId }, (v) =>
    v.external_billing_id === null
      ? `reseller "${v.name}": external billing id cleared`
      : `reseller "${v.name}": external billing id ${v.external_billing_id}`,
  );
}
