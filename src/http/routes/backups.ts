import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import { backupCreateOperation } from '../../jobs/backup-operation.ts';
import { type Backup, findBackup, listBackups, setBackupStatus } from '../../store/repos/backups.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { successEnvelope } from '../envelope.ts';
import { EmptyBody, ServiceParams } from '../schemas.ts';
import { acceptOperation } from './service-actions.ts';
import { ownedService } from './services.ts';

const BackupParams = Type.Object({
  service_id: Type.String({ maxLength: 64 }),
  backup_id: Type.String({ maxLength: 64 }),
});

export function backupView(b: Backup) {
  return {
    backup_id: b.id,
    service_id: b.serviceId,
    status: b.status,
    size_gb: b.sizeGb,
    kind: b.kind,
    created_at: new Date(b.createdAt).toISOString(),
  };
}

function backupIdOf(request: FastifyRequest): string {
  const id = (request.params as { backup_id: string }).backup_id;
  if (!isUuid(id)) throw new ApiError('backup_not_found', 'Backup not found');
  return id.toLowerCase();
}

export function registerBackupRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const scope = { scope: 'service' as const };

  app.get(
    `${API}/service/:service_id/backups`,
    { config: scope, schema: { params: ServiceParams } },
    async (request) => {
      const service = await ownedService(ctx, request);
      return successEnvelope(request.variant, (await listBackups(db, service.id)).map(backupView));
    },
  );

  app.post(
    `${API}/service/:service_id/backup/create`,
    { config: scope, schema: { params: ServiceParams, body: EmptyBody } },
    async (request, reply) => {
      return acceptOperation(ctx, request, reply, backupCreateOperation('manual'));
    },
  );

  app.post(
    `${API}/service/:service_id/backup/restore/:backup_id`,
    { config: scope, schema: { params: BackupParams, body: EmptyBody } },
    async (request, reply) => {
      const backupId = backupIdOf(request);
      return acceptOperation(ctx, request, reply, {
        action: 'backup_restore',
        params: { backup_id: backupId },
        check: async (service, tx) => {
          const backup = await findBackup(tx, service.id, backupId);
          if (!backup) throw new ApiError('backup_not_found', 'Backup not found');
          if (backup.status === 'failed' || backup.status === 'deleting') {
            throw new ApiError('invalid_state', `Cannot restore a backup that is ${backup.status}`);
          }
        },
      });
    },
  );

  app.post(
    `${API}/service/:service_id/backup/delete/:backup_id`,
    { config: scope, schema: { params: BackupParams, body: EmptyBody } },
    async (request, reply) => {
      const backupId = backupIdOf(request);
      const result = await acceptOperation(ctx, request, reply, {
        action: 'backup_delete',
        params: { backup_id: backupId },
        check: async (service, tx) => {
          const backup = await findBackup(tx, service.id, backupId);
          if (!backup) throw new ApiError('backup_not_found', 'Backup not found');
          if (backup.status === 'deleting')
            throw new ApiError('invalid_state', 'The backup is already being deleted');
        },
        apply: (tx) => setBackupStatus(tx, backupId, 'deleting', ctx.clock.now()),
      });
      // Variant A carries a human message for a successful deletion (CONTRACT.md section 2).
      return request.variant === 'A' ? successEnvelope('A', [], 'Backup deletion accepted') : result;
    },
  );
}
