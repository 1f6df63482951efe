import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../store/errors.ts';
import { recordAudit } from '../store/repos/audit.ts';
import {
  createReseller,
  findResellerByName,
  listResellers,
  setResellerEnabled,
} from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, type Output, positionals, UsageError } from './output.ts';
import { resellerQuotaCommand } from './quotas.ts';

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;

/** `vrp reseller create|list|enable|disable|quota`. */
export async function resellerCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  if (args[0] === 'quota') return resellerQuotaCommand(db, args.slice(1), out);
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
      })),
      (l) =>
        l.length === 0
          ? '(no resellers)'
          : l.map((r) => `${r.name}\t${r.enabled ? 'enabled' : 'disabled'}\t${r.id}`).join('\n'),
    );
    return;
  }
  if (!name) throw new UsageError(`reseller ${sub}: a NAME is required`);
  if (sub === 'create') {
    if (!NAME.test(name))
      throw new CommandError(
        'a reseller name is 1-100 letters, digits, spaces, dots, underscores or hyphens, starting with a letter or digit',
      );
    if (await findResellerByName(db, name))
      throw new CommandError(`a reseller named "${name}" exists already`);
    const now = Date.now();
    const r = await db
      .transaction()
      .execute(async (tx) => {
        const created = await createReseller(tx, name, now);
        const subject = { target: { type: 'reseller', id: created.id }, resellerId: created.id };
        await recordAudit(tx, cliAudit('reseller.create'), subject, now);
        return created;
      })
      .catch((err) => {
        // Another `vrp reseller create` of the same name won the race.
        if (isUniqueViolation(err)) throw new CommandError(`a reseller named "${name}" exists already`);
        throw err;
      });
    out.result({ id: r.id, name: r.name }, (v) => `reseller "${v.name}" created (${v.id})`);
    return;
  }
  const now = Date.now();
  await db.transaction().execute(async (tx) => {
    const r = await findResellerByName(tx, name);
    if (!r) throw new CommandError(`no reseller named "${name}"`);
    await setResellerEnabled(tx, r.id, sub === 'enable');
    const subject = { target: { type: 'reseller', id: r.id }, resellerId: r.id };
    await recordAudit(tx, cliAudit(`reseller.${sub}`), subject, now);
  });
  out.result(
    { name, enabled: sub === 'enable' },
    (v) => `reseller "${v.name}" ${v.enabled ? 'enabled' : 'disabled'}`,
  );
}
