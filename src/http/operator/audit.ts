import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { type AuditActorType, type AuditEntry, listAuditEntries } from '../../store/repos/audit.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { InputId, isUuid } from '../schemas/common.ts';
import { AuditEntryPayload } from '../schemas/operator.ts';
import { operatorRoute } from './operator-route.ts';
import { decodeCursor, encodeCursor, limitOf, Page, PageQuery, pageOf } from './paging.ts';

function entryView(e: AuditEntry): Static<typeof AuditEntryPayload> {
  return {
    entry_id: e.id,
    created_at: new Date(e.createdAt).toISOString(),
    actor: { type: e.actor.type, id: e.actor.id, name: e.actor.name },
    credential: e.credential && { type: e.credential.type, id: e.credential.id },
    source_address: e.address,
    reason: e.reason,
    action: e.action,
    target: e.target && { type: e.target.type, id: e.target.id },
    service_id: e.serviceId,
    service_domain: e.serviceDomain,
    reseller_id: e.resellerId,
    outcome: e.outcome,
    request_id: e.requestId,
  };
}

const ACTOR = /^(application|operator|cli|system)(?::(.{1,200}))?$/;

/** The `actor` filter: a type, and an id if given; null if the text is not one. */
function actorFilter(text: string): { type: AuditActorType; id: string | undefined } | null {
  const m = ACTOR.exec(text);
  const type = m?.[1];
  if (type !== 'application' && type !== 'operator' && type !== 'cli' && type !== 'system') return null;
  return { type, id: m?.[2] };
}

const AuditQuery = Type.Object({
  after: Type.Optional(
    InputId('Entries after this one, oldest first (to follow the log); without it the newest come first'),
  ),
  actor: Type.Optional(
    Type.String({
      maxLength: 220,
      description:
        '`operator`, `application`, `cli` or `system`, alone or with `:` and the id (`application:vrp_...`)',
    }),
  ),
  action: Type.Optional(
    Type.String({
      maxLength: 100,
      description: 'Entries of this action exactly (`service.suspend`); one no entry has gives an empty list',
    }),
  ),
  actor_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 300,
      description:
        'Entries whose actor had this name exactly (an operator’s name, `reseller / application`, a local user)',
    }),
  ),
  service_id: Type.Optional(InputId('Entries about this service (its backups and schedules too)')),
  reseller_id: Type.Optional(InputId('Entries about this reseller’s objects')),
  ...PageQuery,
});

/** `GET OPS/audit`: who changed what (docs/design/contract.md#operator-api). */
export function registerOperatorAuditRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  app.get(
    `${OPS}/audit`,
    operatorRoute({
      operationId: 'listAudit',
      tags: ['Audit'],
      summary: 'The audit log',
      description:
        'Every state-changing request of applications and operators, every change by the `vrp` command and by the product itself: time, actor (kind, id, name), the credential used, the source address, action, target, the reason given, outcome (`ok` or the refusal’s error code), request id. Newest first; with `after`, the entries after that one, oldest first. Filters (`actor`, `actor_name`, `action`, `service_id`, `reseller_id`) combine.',
      querystring: AuditQuery,
      response: { 200: Page(AuditEntryPayload) },
    }),
    async (request) => {
      const q = request.query;
      const limit = limitOf(q);
      const actor = q.actor === undefined ? undefined : actorFilter(q.actor);
      if (actor === null) {
        throw new ApiError(
          'validation_failed',
          'actor must be operator, application, cli or system, optionally with :id',
        );
      }
      if (q.after !== undefined && !isUuid(q.after))
        throw new ApiError('validation_failed', 'after must be an entry id');
      // The cursor carries the order of its list: a page goes on the way the first one went.
      const cursor =
        q.cursor === undefined
          ? undefined
          : decodeCursor(ctx.keys.cursorKey, 'audit', q.cursor, ['string', 'string'] as const);
      const order = cursor ? cursor[0] : q.after !== undefined ? 'oldest' : 'newest';
      if (order !== 'newest' && order !== 'oldest') {
        throw new ApiError('invalid_cursor', 'cursor is not one this list gave');
      }
      const after = cursor ? cursor[1] : q.after?.toLowerCase();
      const ids = [q.service_id, q.reseller_id];
      // An id that is no UUID is in no entry.
      if (ids.some((id) => id !== undefined && !isUuid(id))) return { items: [], next_cursor: null };
      const rows = await listAuditEntries(db, {
        after,
        order,
        actor,
        action: q.action,
        actorName: q.actor_name,
        serviceId: q.service_id?.toLowerCase(),
        resellerId: q.reseller_id?.toLowerCase(),
        limit: limit + 1,
      });
      return pageOf(rows, limit, entryView, (e) => encodeCursor(ctx.keys.cursorKey, 'audit', [order, e.id]));
    },
  );
}
