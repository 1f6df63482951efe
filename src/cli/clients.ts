import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import {
  ApplicationError,
  registerApplication,
  revokeApplicationTokens,
  rotateApplicationSecret,
  setApplicationEnabled,
} from '../auth/applications.ts';
import { parseScopes } from '../domain/scopes.ts';
import { listClients } from '../store/repos/clients.ts';
import { findResellerByName } from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, isParseArgsError, type Output, positionals, UsageError } from './output.ts';

export async function clientCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  const [sub, ...rest] = args;
  const now = Date.now();
  try {
    if (sub === 'create') {
      const { values, positionals } = parseArgs({
        args: rest,
        options: {
          reseller: { type: 'string' },
          scopes: { type: 'string' },
          variant: { type: 'string' },
          name: { type: 'string' },
        },
        allowPositionals: true,
      });
      if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(' ')}`);
      if (!values.reseller) throw new UsageError('client create: --reseller NAME is required');
      const scopes = values.scopes === undefined ? undefined : parseScopes(values.scopes);
      if (scopes === undefined && values.scopes !== undefined) {
        throw new UsageError('--scopes is a comma-separated list of access, products, service');
      }
      const variant = values.variant;
      if (variant !== undefined && variant !== 'A' && variant !== 'B') {
        throw new UsageError('--variant is A or B');
      }
      const app = await registerApplication(
        db,
        {
          reseller: values.reseller,
          scopes,
          variant,
          name: values.name,
        },
        now,
        cliAudit('client.create'),
      );
      out.result(
        {
          client_id: app.client_id,
          client_secret: app.client_secret,
          scopes: app.scopes,
          variant: app.variant,
        },
        (v) =>
          `client_id:     ${v.client_id}\nclient_secret: ${v.client_secret}\nscopes:        ${v.scopes}\nvariant:       ${v.variant}\n` +
          'The secret is shown only now; store it in the reseller application.',
      );
      return;
    }
    if (sub === 'list') {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { reseller: { type: 'string' } },
        allowPositionals: true,
      });
      if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(' ')}`);
      let resellerId: string | undefined;
      if (values.reseller) {
        const r = await findResellerByName(db, values.reseller);
        if (!r) throw new CommandError(`no reseller named "${values.reseller}"`);
        resellerId = r.id;
      }
      const list = (await listClients(db, resellerId)).map((c) => ({
        client_id: c.id,
        reseller: c.resellerName,
        name: c.name,
        scopes: c.scopes.join(' '),
        variant: c.variant,
        enabled: c.enabled,
        created_at: new Date(c.createdAt).toISOString(),
      }));
      out.result(list, (l) =>
        l.length === 0
          ? '(no applications)'
          : l
              .map(
                (c) =>
                  `${c.client_id}\t${c.reseller}\t${c.scopes}\t${c.variant}\t${c.enabled ? 'enabled' : 'disabled'}`,
              )
              .join('\n'),
      );
      return;
    }
    if (sub !== 'rotate-secret' && sub !== 'disable' && sub !== 'enable' && sub !== 'revoke-tokens') {
      throw new UsageError(`unknown command: client ${sub ?? ''}`);
    }
    const [id, ...extra] = positionals(rest, `client ${sub}`);
    if (extra.length > 0) throw new UsageError(`client ${sub}: unexpected arguments: ${extra.join(' ')}`);
    if (!id) throw new UsageError(`client ${sub}: a CLIENT_ID is required`);
    const missing = () => new CommandError(`no application with client_id "${id}"`);
    if (sub === 'rotate-secret') {
      const secret = await rotateApplicationSecret(db, id, now, cliAudit('client.rotate_secret'));
      out.result(
        { client_id: id, client_secret: secret },
        (v) => `new client_secret: ${v.client_secret}\n(tokens issued before no longer work)`,
      );
    } else if (sub === 'disable' || sub === 'enable') {
      const enable = sub === 'enable';
      if (!(await setApplicationEnabled(db, id, enable, now, cliAudit(`client.${sub}`)))) throw missing();
      out.result(
        { client_id: id, enabled: enable },
        (v) => `application ${v.client_id} ${v.enabled ? 'enabled' : 'disabled'}`,
      );
    } else {
      if (!(await revokeApplicationTokens(db, id, now, cliAudit('client.revoke_tokens')))) throw missing();
      out.result(
        { client_id: id, revoked: true },
        (v) => `every token of ${v.client_id} issued until now is revoked`,
      );
    }
  } catch (err) {
    if (err instanceof ApplicationError) throw new CommandError(err.message);
    if (isParseArgsError(err)) throw new UsageError(err.message);
    throw err;
  }
}
