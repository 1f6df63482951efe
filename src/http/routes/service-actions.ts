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
import { EmptyBody, EmptyList, ServiceParams } from '../schemas.ts';
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
    { resellerId: request.caller!.resellerId, serviceId: serviceIdOf(request), ...operation },
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

const WithServiceId = { service_id: Type.Optional(Type.String({ maxLength: 64 })) };
const Amount = Type.Integer({ minimum: 0, maximum: 1_000_000 });

export const SuspendBody = Type.Object({
  ...WithServiceId,
  suspend_reason: Type.Optional(Type.String({ maxLength: 1000 })),
});
export const UpgradeBody = Type.Object({
  ...WithServiceId,
  CPU: Amount,
  RAM: Amount,
  HDD: Amount,
  IP: Amount,
  BACKUP: Amount,
});
export const ResetPasswordBody = Type.Object({
  ...WithServiceId,
  password: Type.String({ maxLength: 1024 }),
});

export function registerServiceActionRoutes(app: App, ctx: AppContext): void {
  const url = (path: string) => `${API}/service/:service_id/${path}`;
  const options = <B extends TSchema>(body: B) =>
    apiRoute('service', { params: ServiceParams, body, response: { 200: EmptyList } });

  const simple: [string, 'create' | 'terminate' | 'unsuspend' | 'start' | 'stop' | 'restart'][] = [
    ['create', 'create'],
    ['terminate', 'terminate'],
    ['unsuspend', 'unsuspend'],
    ['start', 'start'],
    ['stop', 'stop'],
    ['restart', 'restart'],
  ];
  for (const [path, action] of simple) {
    app.post(url(path), options(EmptyBody), (request, reply) =>
      acceptOperation(ctx, request, reply, { action }),
    );
  }

  app.post(url('suspend'), options(SuspendBody), (request, reply) =>
    acceptOperation(ctx, request, reply, {
      action: 'suspend',
      params: { reason: request.body.suspend_reason ?? null },
    }),
  );

  app.post(url('upgrade'), options(UpgradeBody), async (request, reply) => {
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

  app.post(url('reset-password'), options(ResetPasswordBody), async (request, reply) => {
    checkPasswordStrength(request.body.password);
    return acceptOperation(ctx, request, reply, {
      action: 'reset_password',
      params: { password_enc: ctx.secretBox.seal(request.body.password) },
    });
  });
}
