import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import {
  createOperator,
  OperatorError,
  rotateOperatorSecret,
  setOperatorEnabledByName,
  setOperatorPassword,
  setOperatorRoleByName,
} from '../auth/operators.ts';
import { resetTwoFactorByName } from '../auth/two-factor.ts';
import { messageOf } from '../domain/errors.ts';
import { listOperators } from '../store/repos/operators.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, isParseArgsError, type Output, positionals, UsageError } from './output.ts';

/**
 * The console password from standard input (as `docker login --password-stdin` takes one):
 * everything up to the end, without one final line break. Never an argument, which `ps` and
 * shell histories would show.
 */
function readPassword(): string {
  let text: string;
  try {
    text = readFileSync(0, 'utf8');
  } catch (err) {
    throw new CommandError(`cannot read the password from stdin: ${messageOf(err)}`);
  }
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new CommandError('no password on stdin');
  return password;
}

/** NAME and the --password-stdin flag of `operator create` and `operator set-password` (and create's --role). */
function nameAndPasswordFlag(
  sub: string,
  args: string[],
): { name: string; passwordStdin: boolean; role: string | undefined } {
  const { values, positionals: names } = parseArgs({
    args,
    options: {
      'password-stdin': { type: 'boolean' },
      ...(sub === 'create' ? { role: { type: 'string' } } : {}),
    },
    allowPositionals: true,
  });
  const [name, ...extra] = names;
  if (extra.length > 0) throw new UsageError(`operator ${sub}: unexpected arguments: ${extra.join(' ')}`);
  if (!name) throw new UsageError(`operator ${sub}: a NAME is required`);
  const role = 'role' in values && typeof values.role === 'string' ? values.role : undefined;
  return { name, passwordStdin: values['password-stdin'] === true, role };
}

/** `vrp operator create|list|disable|enable|rotate-secret|set-password|set-role|reset-2fa` (docs/cli.md). */
export async function operatorCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  const [sub, ...rest] = args;
  const now = Date.now();
  try {
    if (sub === 'create') {
      const { name, passwordStdin, role } = nameAndPasswordFlag(sub, rest);
      const password = passwordStdin ? readPassword() : undefined;
      const created = await createOperator(db, { name, role, password }, now, cliAudit('operator.create'));
      out.result(
        created,
        (v) =>
          `operator:      ${v.operator}\nclient_id:     ${v.client_id}\nclient_secret: ${v.client_secret}\nrole:          ${v.role}\n` +
          `The secret is shown only now; the operator's scripts ask for tokens with it (scope operator).` +
          (password === undefined ? '' : '\nThe console password is set.'),
      );
      return;
    }
    if (sub === 'set-password') {
      const { name, passwordStdin } = nameAndPasswordFlag(sub, rest);
      if (!passwordStdin) throw new UsageError('operator set-password: --password-stdin is required');
      await setOperatorPassword(db, name, readPassword(), now, cliAudit('operator.set_password'));
      out.result({ operator: name, password_set: true }, (v) => `console password of "${v.operator}" set`);
      return;
    }
    if (sub === 'set-role') {
      const [name, role, ...extra] = positionals(rest, 'operator set-role');
      if (extra.length > 0)
        throw new UsageError(`operator set-role: unexpected arguments: ${extra.join(' ')}`);
      if (!name || !role) throw new UsageError('operator set-role: NAME and ROLE are required');
      await setOperatorRoleByName(db, name, role, now, cliAudit('operator.set_role'));
      out.result({ operator: name, role }, (v) => `operator "${v.operator}" is now ${v.role}`);
      return;
    }
    if (sub === 'list') {
      if (positionals(rest, 'operator list').length > 0) {
        throw new UsageError(`operator list: unexpected arguments: ${rest.join(' ')}`);
      }
      const list = (await listOperators(db)).map((o) => ({
        name: o.name,
        client_id: o.clientId,
        enabled: o.enabled,
        role: o.role,
        console_password: o.hasPassword,
        two_factor: o.twoFactor,
        created_at: new Date(o.createdAt).toISOString(),
      }));
      out.result(list, (l) =>
        l.length === 0
          ? '(no operators)'
          : l
              .map(
                (o) =>
                  `${o.name}\t${o.client_id}\t${o.enabled ? 'enabled' : 'disabled'}\t` +
                  (o.console_password ? 'console password' : 'no console password') +
                  `\t${o.role}` +
                  (o.two_factor ? '\ttwo-factor' : ''),
              )
              .join('\n'),
      );
      return;
    }
    if (sub === 'reset-2fa') {
      const [name, ...extra] = positionals(rest, `operator ${sub}`);
      if (extra.length > 0) throw new UsageError(`operator ${sub}: unexpected arguments: ${extra.join(' ')}`);
      if (!name) throw new UsageError(`operator ${sub}: a NAME is required`);
      const removed = await resetTwoFactorByName(db, name, now, cliAudit('operator.reset_2fa'));
      out.result({ operator: name, two_factor_removed: removed }, (v) =>
        v.two_factor_removed
          ? `two-factor login of "${v.operator}" removed; its console sessions ended (it logs in with its password, and may enrol again)`
          : `operator "${v.operator}" had no two-factor login; nothing changed`,
      );
      return;
    }
    if (sub !== 'disable' && sub !== 'enable' && sub !== 'rotate-secret') {
      throw new UsageError(`unknown command: operator ${sub ?? ''}`);
    }
    const [name, ...extra] = positionals(rest, `operator ${sub}`);
    if (extra.length > 0) throw new UsageError(`operator ${sub}: unexpected arguments: ${extra.join(' ')}`);
    if (!name) throw new UsageError(`operator ${sub}: a NAME is required`);
    if (sub === 'rotate-secret') {
      const rotated = await rotateOperatorSecret(db, name, now, cliAudit('operator.rotate_secret'));
      out.result(
        rotated,
        (v) =>
          `new client_secret: ${v.client_secret}\n(the old secret and tokens issued before no longer work)`,
      );
      return;
    }
    const enabled = sub === 'enable';
    await setOperatorEnabledByName(db, name, enabled, now, cliAudit(`operator.${sub}`));
    out.result(
      { operator: name, enabled },
      (v) =>
        `operator "${v.operator}" ${v.enabled ? 'enabled (it asks for new tokens)' : 'disabled; its tokens no longer work'}`,
    );
  } catch (err) {
    if (err instanceof OperatorError) throw new CommandError(err.message);
    if (isParseArgsError(err)) throw new UsageError(err.message);
    throw err;
  }
}
