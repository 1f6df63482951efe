import type { Kysely } from 'kysely';
import {
  createReseller,
  findResellerByName,
  listResellers,
  setResellerEnabled,
} from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { CommandError, type Output, UsageError } from './output.ts';

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;

export async function resellerCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  const [sub, name, ...rest] = args;
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  if (sub === 'list' && name === undefined) {
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
  if (!name) throw new UsageError(`reseller ${sub ?? ''}: a NAME is required`);
  if (sub === 'create') {
    if (!NAME.test(name))
      throw new CommandError(
        'a reseller name is 1-100 letters, digits, spaces, dots, underscores or hyphens',
      );
    if (await findResellerByName(db, name))
      throw new CommandError(`a reseller named "${name}" exists already`);
    const r = await createReseller(db, name, Date.now());
    out.result({ id: r.id, name: r.name }, (v) => `reseller "${v.name}" created (${v.id})`);
    return;
  }
  if (sub === 'enable' || sub === 'disable') {
    const r = await findResellerByName(db, name);
    if (!r) throw new CommandError(`no reseller named "${name}"`);
    await setResellerEnabled(db, r.id, sub === 'enable');
    out.result(
      { name, enabled: sub === 'enable' },
      (v) => `reseller "${v.name}" ${v.enabled ? 'enabled' : 'disabled'}`,
    );
    return;
  }
  throw new UsageError(`unknown command: reseller ${sub ?? ''}`);
}
