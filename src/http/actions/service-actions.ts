import type { FastifyReply } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { checkPasswordStrength } from '../../domain/passwords.ts';
import { type Operation, requestOperation } from '../../jobs/queue.ts';
import { upgradeOperation } from '../../jobs/upgrade-operation.ts';
import { type ApiSchema, answerMessage, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { auditContext } from '../plugins/audit.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { BodyServiceId, EmptyBody, EmptyList, ServiceParams } from '../schemas/common.ts';
import { JOB_HEADERS } from '../schemas/services.ts';
import { type ServiceRequest, serviceIdOf } from '../service-id.ts';

/** A service an operation acts on, and the reseller it belongs to (the tenant the operation runs in). */
export interface ServiceTarget {
  readonly resellerId: string;
  readonly serviceId: string;
}

/**
 * A door through which operations reach services: the reseller API (an application acts on its
 * reseller's services) or the operator API (an operator acts for any reseller). The routes of
 * each door are registered from the same code, so both ask the same operations with the same
 * bodies and the same checks.
 */
export interface ServiceDoor {
  /** The path of a per-service route, with `:service_id`. */
  readonly url: (path: string) => string;
  /** The route's options around `schema`: scope, envelope, audit action. */
  readonly route: <const S extends ApiSchema>(schema: S, audit?: string) => ReturnType<typeof apiRoute<S>>;
  /** The operationId in the door's OpenAPI document, from the reseller API's one. */
  readonly operationId: (name: string) => string;
  /** The tag of operations of `group` (`Service actions`, `Backups`, `Reverse DNS`). */
  readonly tag: (group: string) => string;
  /** The service the request names, if the caller may act on it; 404 `service_not_found` otherwise. */
  readonly target: (request: ServiceRequest) => Promise<ServiceTarget>;
}

/** The reseller API's door: the application's own services only. */
export const RESELLER_DOOR: ServiceDoor = {
  url: (path) => `${API}/service/:service_id/${path}`,
  route: (schema, audit) => apiRoute('service', schema, audit),
  operationId: (name) => name,
  tag: (group) => group,
  target: async (request) => ({
    resellerId: applicationCaller(request).resellerId,
    serviceId: serviceIdOf(request),
  }),
};

/**
 * Accepts an operation as a job and answers `[]` once it is durably queued
 * (docs/design/contract.md#jobs); a repeat whose target is already reached answers 200 with a
 * message and no job.
 * The service is the one `door` finds for the request (the reseller API's by default).
 */
export async function acceptOperation(
  ctx: AppContext,
  request: ServiceRequest,
  reply: FastifyReply,
  operation: Operation,
  door: ServiceDoor = RESELLER_DOOR,
): Promise<Static<typeof EmptyList>> {
  const { action } = operation;
  const target = await door.target(request);
  const outcome = await requestOperation(
    ctx.store.db,
    {
      ...target,
      audit: auditContext(request),
      ...operation,
    },
    ctx.clock.now(),
  );
  if (outcome.kind === 'noop') {
    answerMessage(reply, outcome.message);
    return [];
  }
  ctx.jobSignal.notify();
  reply.header('x-job-id', outcome.job.id);
  request.log.info({ serviceId: outcome.service.id, jobId: outcome.job.id, action }, 'job queued');
  return [];
}

const WithServiceId = { service_id: BodyServiceId };
const Amount = (description: string) => Type.Integer({ minimum: 0, maximum: 1_000_000, description });

const SuspendBody = Type.Object({
  ...WithServiceId,
  suspend_reason: Type.Optional(
    Type.String({ maxLength: 1000, description: 'Why (billing); shown in details as `suspend_reason`' }),
  ),
});
export const UpgradeBody = Type.Object({
  ...WithServiceId,
  CPU: Amount('vCores, within the product’s bounds'),
  RAM: Amount('GB, within the product’s bounds'),
  HDD: Amount('GB, within the product’s bounds; never below the current size'),
  IP: Amount('Addresses; the first one stays'),
  BACKUP: Amount('GB of backup space; never below what the backups use now'),
});
const ResetPasswordBody = Type.Object({
  ...WithServiceId,
  // Any string: its length is checked with the rest of the strength rules (400 `weak_password`).
  password: Type.String({
    description:
      '8 to 128 characters with at least three of lower case, upper case, digits and symbols (400 `weak_password` otherwise)',
  }),
});

/** Each operation's part of the OpenAPI document: its summary and what it does. */
const DOCS = {
  create: ['Provision the server', 'Creates the virtual server of a `pending` (or `failed`) service.'],
  terminate: [
    'Terminate the service',
    'Releases the server, its addresses and backups; the record stays, `terminated`. Terminating a terminated service answers 200 and does nothing.',
  ],
  suspend: [
    'Suspend the service',
    'Powers the server off and locks it (billing). Suspending a suspended service answers 200 and does nothing.',
  ],
  unsuspend: [
    'Unsuspend the service',
    'Returns the service to the power state it had before the suspension.',
  ],
  start: ['Start the server', 'Starting a running server answers 200 and does nothing.'],
  stop: ['Stop the server', 'Stopping a stopped server answers 200 and does nothing.'],
  restart: ['Restart the server', 'Restarts a running server.'],
  upgrade: [
    'Change the amounts',
    'All five amounts, each within the product’s bounds. HDD cannot shrink (400 `disk_shrink_not_supported`); BACKUP cannot go below what the backups use (400 `backup_quota_exceeded`).',
  ],
  resetPassword: ['Set a new root password', 'The password details will show once the job has run.'],
} as const;

/** How every job-creating operation answers (docs/design/contract.md#jobs). */
export const JOB_ANSWER =
  ' Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).';

export function registerServiceActionRoutes(app: App, ctx: AppContext): void {
  registerServiceActions(app, ctx, RESELLER_DOOR);
}

/** The lifecycle operations (docs/design/contract.md#service-statuses), through `door`. */
export function registerServiceActions(app: App, ctx: AppContext, door: ServiceDoor): void {
  const { url } = door;
  // The audit action of each: `service.` and the operation in snake case.
  const options = <B extends TSchema>(
    operationId: keyof typeof DOCS,
    body: B,
    audit = `service.${operationId}`,
  ) =>
    door.route(
      {
        operationId: door.operationId(operationId),
        tags: [door.tag('Service actions')],
        summary: DOCS[operationId][0],
        description: DOCS[operationId][1] + JOB_ANSWER,
        successHeaders: JOB_HEADERS,
        params: ServiceParams,
        body,
        response: { 200: EmptyList },
      },
      audit,
    );

  const simple = ['create', 'terminate', 'unsuspend', 'start', 'stop', 'restart'] as const;
  for (const action of simple) {
    app.post(url(action), options(action, EmptyBody), (request, reply) =>
      acceptOperation(ctx, request, reply, { action }, door),
    );
  }

  app.post(url('suspend'), options('suspend', SuspendBody), (request, reply) =>
    acceptOperation(
      ctx,
      request,
      reply,
      {
        action: 'suspend',
        params: { reason: request.body.suspend_reason ?? null },
      },
      door,
    ),
  );

  app.post(url('upgrade'), options('upgrade', UpgradeBody), async (request, reply) => {
    const b = request.body;
    const amounts = { cpu: b.CPU, ram: b.RAM, hdd: b.HDD, ip: b.IP, backup: b.BACKUP };
    const catalog = await ctx.catalog.get();
    return acceptOperation(ctx, request, reply, upgradeOperation(catalog, ctx.store.features, amounts), door);
  });

  app.post(
    url('reset-password'),
    options('resetPassword', ResetPasswordBody, 'service.reset_password'),
    async (request, reply) => {
      checkPasswordStrength(request.body.password);
      return acceptOperation(
        ctx,
        request,
        reply,
        {
          action: 'reset_password',
          params: { password_enc: ctx.secretBox.seal(request.body.password) },
        },
        door,
      );
    },
  );
}
