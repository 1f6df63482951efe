import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { checkBounds, shrinksDisk, UPGRADE_FIELD_NAMES } from '../../domain/orders.ts';
import { checkPasswordStrength } from '../../domain/passwords.ts';
import { type Operation, requestOperation } from '../../jobs/queue.ts';
import { usedBackupGb } from '../../store/repos/backups.ts';
import { checkUpgradeQuota } from '../../store/repos/quotas.ts';
import type { Service } from '../../store/repos/services.ts';
import { answerMessage, apiRoute } from '../api-route.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { auditContext } from '../plugins/audit.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { BodyServiceId, EmptyBody, EmptyList, ServiceParams } from '../schemas.ts';
import { serviceIdOf } from '../service-id.ts';

/**
 * Accepts an operation as a job and answers `[]` once it is durably queued (CONTRACT.md
 * section 7); a repeat whose target is already reached answers 200 with a message and no job.
 */
export async function acceptOperation(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: Operation,
): Promise<Static<typeof EmptyList>> {
  const { action } = operation;
  const outcome = await requestOperation(
    ctx.store.db,
    {
      resellerId: applicationCaller(request).resellerId,
      serviceId: serviceIdOf(request),
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

export const SuspendBody = Type.Object({
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
export const ResetPasswordBody = Type.Object({
  ...WithServiceId,
  password: Type.String({
    maxLength: 1024,
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

/** The header of the answer that names the job an operation queued. */
export const JOB_HEADERS = {
  'X-Job-Id': {
    description: 'The job queued (absent when nothing was to be done)',
    schema: { type: 'string', format: 'uuid' },
  },
};

/** How every job-creating operation answers (CONTRACT.md section 7). */
export const JOB_ANSWER =
  ' Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).';

export function registerServiceActionRoutes(app: App, ctx: AppContext): void {
  const url = (path: string) => `${API}/service/:service_id/${path}`;
  // The audit action of each: `service.` and the operation in snake case.
  const options = <B extends TSchema>(
    operationId: keyof typeof DOCS,
    body: B,
    audit = `service.${operationId}`,
  ) =>
    apiRoute(
      'service',
      {
        operationId,
        tags: ['Service actions'],
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
      acceptOperation(ctx, request, reply, { action }),
    );
  }

  app.post(url('suspend'), options('suspend', SuspendBody), (request, reply) =>
    acceptOperation(ctx, request, reply, {
      action: 'suspend',
      params: { reason: request.body.suspend_reason ?? null },
    }),
  );

  app.post(url('upgrade'), options('upgrade', UpgradeBody), async (request, reply) => {
    const b = request.body;
    const amounts = { cpu: b.CPU, ram: b.RAM, hdd: b.HDD, ip: b.IP, backup: b.BACKUP };
    const catalog = await ctx.catalog.get();
    return acceptOperation(ctx, request, reply, {
      action: 'upgrade',
      params: amounts,
      check: async (service: Service, tx) => {
        const product = catalog.byId.get(service.productId);
        if (!product)
          throw new ApiError('product_not_found', 'The product of this service is no longer offered');
        checkBounds(product, amounts, UPGRADE_FIELD_NAMES);
        if (shrinksDisk(service.hdd, amounts.hdd)) {
          throw new ApiError(
            'disk_shrink_not_supported',
            `HDD cannot go below the current ${service.hdd} GB; disks only grow`,
          );
        }
        const used = await usedBackupGb(tx, service.id);
        if (amounts.backup < used) {
          throw new ApiError(
            'backup_quota_exceeded',
            `BACKUP cannot go below the ${used} GB the service's backups use now; delete backups first`,
          );
        }
        await checkUpgradeQuota(tx, ctx.store.features, service, amounts);
      },
    });
  });

  app.post(
    url('reset-password'),
    options('resetPassword', ResetPasswordBody, 'service.reset_password'),
    async (request, reply) => {
      checkPasswordStrength(request.body.password);
      return acceptOperation(ctx, request, reply, {
        action: 'reset_password',
        params: { password_enc: ctx.secretBox.seal(request.body.password) },
      });
    },
  );
}
