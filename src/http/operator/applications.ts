import type { FastifyReply } from 'fastify';
import { type Static, Type } from 'typebox';
import {
  registerApplication,
  revokeApplicationTokens,
  rotateApplicationSecret,
  setApplicationEnabled,
} from '../../auth/applications.ts';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { type Client, listClients } from '../../store/repos/clients.ts';
import { findReseller } from '../../store/repos/resellers.ts';
import { answerMessage } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { notFound, pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { InputId } from '../schemas/common.ts';
import { ApplicationPayload, NewApplicationBody, NewApplicationPayload } from '../schemas/operator.ts';
import { operatorRoute } from './operator-route.ts';

const ResellerParams = Type.Object({ reseller_id: InputId('The reseller') });
const ApplicationParams = Type.Object({
  reseller_id: InputId('The reseller'),
  client_id: Type.String({ minLength: 1, maxLength: 100, description: 'The application’s client_id' }),
});

/** An application as the operator API shows it: never its secret. */
export function applicationView(c: Client): Static<typeof ApplicationPayload> {
  return {
    client_id: c.id,
    name: c.name,
    scopes: [...c.scopes],
    variant: c.variant,
    enabled: c.enabled,
    created_at: new Date(c.createdAt).toISOString(),
  };
}

const tags = ['Resellers'];
const SECRET_ONCE =
  'The secret is in this answer only (`Cache-Control: no-store`); it is stored as a salted hash and never written to the audit log.';
const AT_ONCE =
  'Tokens issued before are refused at once by this server process, within 2 seconds by the others.';

/** A secret in an answer: no cache keeps it. */
function noStore(reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
}

/**
 * `OPS/resellers/{id}/applications...`: a reseller's applications (OAuth clients): list, create
 * with the secret shown once, rotate the secret, disable and enable, revoke their tokens; the
 * same operations as `vrp client` (auth/applications.ts), audited as the operator's.
 */
export function registerApplicationRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  async function resellerOf(id: string) {
    const reseller = await findReseller(db, pathId(id, 'reseller_not_found'));
    if (!reseller) throw notFound('reseller_not_found');
    return reseller;
  }
  /** The reseller's application, or 404 (another reseller's is the same as none). */
  async function applicationOf(params: Static<typeof ApplicationParams>): Promise<Client> {
    const reseller = await resellerOf(params.reseller_id);
    const found = (await listClients(db, reseller.id)).find((c) => c.id === params.client_id);
    if (!found)
      throw new ApiError('application_not_found', 'The reseller has no application with that client_id');
    return found;
  }

  app.get(
    `${OPS}/resellers/:reseller_id/applications`,
    operatorRoute({
      operationId: 'listApplications',
      tags,
      summary: 'A reseller’s applications',
      description: 'Its applications (OAuth clients), oldest first, without secrets.',
      params: ResellerParams,
      response: { 200: Type.Array(ApplicationPayload) },
    }),
    async (request) => {
      const reseller = await resellerOf(request.params.reseller_id);
      return (await listClients(db, reseller.id)).map(applicationView);
    },
  );

  app.post(
    `${OPS}/resellers/:reseller_id/applications`,
    operatorRoute(
      {
        operationId: 'createApplication',
        tags,
        summary: 'Register an application for a reseller',
        description: `A new application (OAuth client) of the reseller, enabled, with its client_id and secret. ${SECRET_ONCE}`,
        params: ResellerParams,
        body: NewApplicationBody,
        response: { 200: NewApplicationPayload },
      },
      'client.create',
    ),
    async (request, reply) => {
      const reseller = await resellerOf(request.params.reseller_id);
      const { name, scopes, variant } = request.body;
      const created = await registerApplication(
        db,
        { reseller: reseller.name, name, scopes, variant, secretCost: ctx.secretCost },
        ctx.clock.now(),
        auditContext(request),
      );
      const client = await applicationOf({ reseller_id: reseller.id, client_id: created.client_id });
      noStore(reply);
      return { ...applicationView(client), client_secret: created.client_secret };
    },
  );

  app.post(
    `${OPS}/resellers/:reseller_id/applications/:client_id/rotate-secret`,
    operatorRoute(
      {
        operationId: 'rotateApplicationSecret',
        tags,
        summary: 'Give an application a new secret',
        description: `The old secret stops working. ${AT_ONCE} ${SECRET_ONCE}`,
        params: ApplicationParams,
        response: { 200: NewApplicationPayload },
      },
      'client.rotate_secret',
    ),
    async (request, reply) => {
      const client = await applicationOf(request.params);
      const secret = await rotateApplicationSecret(db, client.id, ctx.clock.now(), auditContext(request), {
        secretCost: ctx.secretCost,
      });
      ctx.clientStates.invalidate(client.id);
      noStore(reply);
      return { ...applicationView(client), client_secret: secret };
    },
  );

  const changes = [
    {
      verb: 'disable',
      summary: 'Disable an application',
      description: `It gets no new tokens and its tokens are revoked: refused now, and still after an enable. ${AT_ONCE} Its services stay as they are.`,
      change: (id: string, request: Parameters<typeof auditContext>[0]) =>
        setApplicationEnabled(db, id, false, ctx.clock.now(), auditContext(request)),
    },
    {
      verb: 'enable',
      summary: 'Enable an application',
      description: 'It can get new tokens again; tokens issued before it was disabled stay refused.',
      change: (id: string, request: Parameters<typeof auditContext>[0]) =>
        setApplicationEnabled(db, id, true, ctx.clock.now(), auditContext(request)),
    },
    {
      verb: 'revoke-tokens',
      summary: 'Revoke an application’s tokens',
      description: `Every token issued to it so far is refused; it can get new ones with its secret. ${AT_ONCE}`,
      change: (id: string, request: Parameters<typeof auditContext>[0]) =>
        revokeApplicationTokens(db, id, ctx.clock.now(), auditContext(request)),
    },
  ] as const;
  for (const c of changes) {
    app.post(
      `${OPS}/resellers/:reseller_id/applications/:client_id/${c.verb}`,
      operatorRoute(
        {
          operationId: `${c.verb === 'revoke-tokens' ? 'revokeApplicationTokens' : `${c.verb}Application`}`,
          tags,
          summary: c.summary,
          description: c.description,
          params: ApplicationParams,
          response: { 200: ApplicationPayload },
        },
        `client.${c.verb.replace('-', '_')}`,
      ),
      async (request, reply) => {
        const client = await applicationOf(request.params);
        await c.change(client.id, request);
        ctx.clientStates.invalidate(client.id);
        if (c.verb === 'revoke-tokens') answerMessage(reply, 'Every token issued until now is revoked');
        return applicationView(await applicationOf(request.params));
      },
    );
  }
}
