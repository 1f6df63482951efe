import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { recordAudit } from '../../store/repos/audit.ts';
import { consoleLinkGrounds, insertConsoleLink } from '../../store/repos/service-console-links.ts';
import { findService } from '../../store/repos/services.ts';
import type { App } from '../app-type.ts';
import { BASE, SERVICE_CONSOLE } from '../base-path.ts';
import { baseUrl } from '../base-url.ts';
import { auditContext } from '../plugins/audit.ts';
import { callerOf, invalidToken } from '../plugins/authenticate.ts';
import { EmptyBody, ServiceParams } from '../schemas/common.ts';
import { ConsoleLinkPayload } from '../schemas/console-link.ts';
import type { ConsoleOptions, ServiceConsoles } from '../service-console/consoles.ts';
import { RESELLER_DOOR, type ServiceDoor } from './service-actions.ts';

/** A link opens within this long of being made, once. */
export const CONSOLE_LINK_MS = 60_000;

/**
 * The statuses whose server has a console to show. The store's trigger (migrations/035) ends
 * every link and session of a service whose status becomes another: it holds the same two.
 */
export const CONSOLE_STATUSES: ReadonlySet<string> = new Set(['running', 'rescue']);

/** SHA-256 (hex) of a link's token or a session's secret: only the hash is stored. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function registerConsoleLinkRoutes(app: App, ctx: AppContext, options: ConsoleOptions = {}): void {
  registerConsoleActions(app, ctx, RESELLER_DOOR, options.consoles);
}

/** `console`: a one-time link to the service's console in the browser, through `door`. */
export function registerConsoleActions(
  app: App,
  ctx: AppContext,
  door: ServiceDoor,
  consoles: ServiceConsoles | undefined,
): void {
  app.post(
    door.url('console'),
    door.route(
      {
        operationId: door.operationId('openConsole'),
        tags: [door.tag('Service actions')],
        summary: 'Open the console in the browser',
        description:
          'A one-time link to the server’s console in a browser: it opens within 60 seconds, once, and the session it starts lasts at most VRP_CONSOLE_SESSION_MAX (1 hour by default), ending earlier, for good, when the service leaves `running` or `rescue` (even for a moment: a restart, a suspension lifted), when the reseller is disabled, or when the application that asked for it is disabled or its tokens are revoked. Only while the service is `running` or `rescue` (400 `invalid_state` otherwise); 503 `console_unavailable` when this server reaches no hypervisor.',
        params: ServiceParams,
        body: EmptyBody,
        response: { 200: ConsoleLinkPayload },
      },
      'service.console',
    ),
    async (request) => {
      const target = await door.target(request);
      const service = await findService(ctx.store.db, target.serviceId);
      if (!service || service.resellerId !== target.resellerId)
        throw new ApiError('service_not_found', 'Service not found');
      const notNow = (status: string) =>
        new ApiError(
          'invalid_state',
          `The console is open to a running service or one in rescue; this one is ${status}`,
        );
      if (!CONSOLE_STATUSES.has(service.status)) throw notNow(service.status);
      if (!consoles) {
        throw new ApiError('console_unavailable', 'The console is not available on this server process');
      }
      const token = randomBytes(32).toString('base64url');
      const now = ctx.clock.now();
      const openUntil = now + CONSOLE_LINK_MS;
      const audit = auditContext(request);
      const caller = callerOf(request);
      const asker = { kind: caller.kind, clientId: caller.clientId, tokenVersion: caller.state.tokenVersion };
      await ctx.store.db.transaction().execute(async (tx) => {
        // What ends a link (migrations/035) ends this one from its commit on; what ended it
        // before is read here, from the store.
        const grounds = await consoleLinkGrounds(tx, service.id, asker, ctx.store.features.rowLocks);
        if (!grounds.askerValid) throw invalidToken('The access token has been revoked');
        if (!CONSOLE_STATUSES.has(grounds.status ?? 'gone')) throw notNow(grounds.status ?? 'gone');
        await insertConsoleLink(tx, {
          tokenHash: hashSecret(token),
          serviceId: service.id,
          resellerId: service.resellerId,
          asker,
          now,
          openUntil,
        });
        await recordAudit(
          tx,
          audit,
          {
            target: { type: 'service', id: service.id },
            serviceId: service.id,
            resellerId: service.resellerId,
          },
          now,
        );
      });
      return {
        // The public base URL (as the token endpoint's issuer) ends with BASE.
        url: `${baseUrl(ctx, request)}${SERVICE_CONSOLE.slice(BASE.length)}/${token}`,
        expires_at: new Date(openUntil).toISOString(),
      };
    },
  );
}
