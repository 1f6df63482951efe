import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../../context.ts';
import { isUuid } from '../../domain/ids.ts';
import {
  type AuditActor,
  type AuditContext,
  type AuditCredential,
  type AuditSubject,
  recordAudit,
} from '../../store/repos/audit.ts';
import { toApiError } from '../error-handler.ts';
import { isFields } from '../fields.ts';
import type { Caller } from './authenticate.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The audit action of a state-changing route (`service.start`...). Its handler passes
     * auditContext(request) into the domain operation, which records the change in its own
     * transaction; a refusal after authentication is recorded by the hook below. Routes that
     * change nothing (every GET, the POST reads) have none and cost nothing.
     */
    audit?: string;
  }
}

/** A console login, before or after it has an operator API caller: its operator and session. */
export interface ConsoleActor {
  readonly kind: 'console';
  readonly operatorId: string;
  readonly operatorName: string;
  readonly sessionId: string;
}

/**
 * Who acts in a request, in the audit log's terms: the one place that turns a request into an
 * actor (kind, id, name), the credential it came with and its source address (request.ip: the
 * connection's, or a trusted proxy's X-Forwarded-For, app.ts). An application is named
 * `reseller / application`; an operator by name; a console session is the credential of what
 * an operator does in the console.
 */
function requestAudit(request: FastifyRequest, who: Caller | ConsoleActor, action: string): AuditContext {
  const base = { requestId: request.id, action, address: request.ip };
  if (who.kind === 'application') {
    return {
      ...base,
      actor: { type: 'application', id: who.clientId, name: who.state.name },
      credential: { type: 'application', id: who.clientId },
    };
  }
  const actor: AuditActor = { type: 'operator', id: who.operatorId, name: who.operatorName };
  const credential: AuditCredential =
    who.kind === 'console'
      ? { type: 'console_session', id: who.sessionId }
      : who.consoleSessionId !== undefined
        ? { type: 'console_session', id: who.consoleSessionId }
        : { type: 'operator_client', id: who.clientId };
  return { ...base, actor, credential };
}

/** The audit context of a state-changing request, for the domain operation its route calls. */
export function auditContext(request: FastifyRequest): AuditContext {
  const action = request.routeOptions.config.audit;
  // A route that changes state without saying so is a mistake in the route: a 500, found by tests.
  if (!action || !request.caller) throw new Error(`${request.routeOptions.url} records no audit action`);
  return requestAudit(request, request.caller, action);
}

/** The audit context of a console login or logout: the operator and the session, from this request. */
export function consoleAudit(request: FastifyRequest, who: ConsoleActor, action: string): AuditContext {
  return requestAudit(request, who, action);
}

/**
 * The audit context of a read that is recorded when it succeeds (a revealed password): `action`
 * is named by the handler, not the route, so the route's refusals are not recorded as that action.
 */
export function readAuditContext(request: FastifyRequest, action: string): AuditContext {
  if (!request.caller) throw new Error(`${request.routeOptions.url} has no authenticated caller`);
  return requestAudit(request, request.caller, action);
}

/**
 * Path parameters that name what a route acts on, and the target type each one means. The most
 * specific one present is the target; `service_id` is also the entry's service. Routes that
 * name objects by other parameters add them here.
 */
const TARGET_PARAMS = [
  ['backup_id', 'backup'],
  ['backup_schedule_id', 'backup_schedule'],
  ['webhook_id', 'webhook'],
  ['service_id', 'service'],
  ['job_id', 'job'],
  ['reseller_id', 'reseller'],
] as const;

/** What a refused request was about, from its path: ids only, and only well-formed ones. */
function subjectOf(request: FastifyRequest): AuditSubject {
  const params = isFields(request.params) ? request.params : {};
  const id = (name: string) => {
    const v = params[name];
    return typeof v === 'string' && isUuid(v) ? v.toLowerCase() : undefined;
  };
  const target = TARGET_PARAMS.flatMap(([name, type]) => {
    const found = id(name);
    return found === undefined ? [] : [{ type, id: found }];
  })[0];
  const caller = request.caller;
  return {
    ...(target && { target }),
    ...(id('service_id') !== undefined && { serviceId: id('service_id') }),
    ...(caller?.kind === 'application' && { resellerId: caller.resellerId }),
    // An operator's request about a reseller is that reseller's.
    ...(target?.type === 'reseller' && { resellerId: id('reseller_id') }),
  };
}

/**
 * Records refusals: a state-changing request refused with a 4xx after authentication (a 403 for
 * the wrong scope, a validation failure, an invalid state...) gets an entry with its error code
 * as the outcome, in a write of its own (nothing changed, so there is no transaction to share),
 * before the answer goes out. 429 is not recorded: a client over its rate would otherwise turn
 * every refused request into a write, which is what the limit protects the store from.
 */
export const auditRefusals = fp<{ ctx: AppContext }>(
  (app, { ctx }, done) => {
    app.addHook('onError', async (request, _reply, error) => {
      const action = request.routeOptions.config?.audit;
      const caller = request.caller;
      if (!action || !caller) return;
      const { code, status } = toApiError(error);
      if (status < 400 || status >= 500 || code === 'rate_limited') return;
      const audit = requestAudit(request, caller, action);
      try {
        await recordAudit(ctx.store.db, audit, subjectOf(request), ctx.clock.now(), code);
      } catch (err) {
        // The refusal is the answer; an entry that could not be written must not change it.
        request.log.warn({ err, action }, 'could not record a refused request in the audit log');
      }
    });
    done();
  },
  { name: 'vrp-audit', dependencies: ['vrp-authentication'] },
);
