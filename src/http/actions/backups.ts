import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import {
  backupCreateOperation,
  backupDeleteOperation,
  backupRestoreOperation,
} from '../../jobs/backup-operation.ts';
import { type Backup, listBackups } from '../../store/repos/backups.ts';
import { answerMessage, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { pathId } from '../path-id.ts';
import { EmptyBody, EmptyList, InputId, ServiceParams } from '../schemas/common.ts';
import { BackupPayload, JOB_HEADERS, type OperatorBackupPayload } from '../schemas/services.ts';
import { ownedService } from '../service-id.ts';
import { acceptOperation, JOB_ANSWER, RESELLER_DOOR, type ServiceDoor } from './service-actions.ts';

const BackupParams = Type.Object({
  service_id: InputId('The service'),
  backup_id: InputId('The backup'),
});

export function backupView(b: Backup): Static<typeof BackupPayload> {
  return {
    backup_id: b.id,
    service_id: b.serviceId,
    status: b.status,
    size_gb: b.sizeGb,
    kind: b.kind,
    created_at: new Date(b.createdAt).toISOString(),
  };
}

export function operatorBackupView(b: Backup): Static<typeof OperatorBackupPayload> {
  return {
    ...backupView(b),
    format: b.format,
    parent_id: b.parentId,
    stored_bytes: b.storedBytes,
    disk_bytes: b.diskBytes,
    host_id: b.hostId,
    keep_until: b.keepUntil === null ? null : new Date(b.keepUntil).toISOString(),
  };
}

export function registerBackupRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  app.get(
    `${API}/service/:service_id/backups`,
    apiRoute('service', {
      operationId: 'backups',
      tags: ['Backups'],
      summary: 'List the service’s backups',
      description: 'Every backup of the service, with its status and size.',
      params: ServiceParams,
      response: { 200: Type.Array(BackupPayload) },
    }),
    async (request) => {
      const service = await ownedService(ctx, request);
      return (await listBackups(db, service.id)).map(backupView);
    },
  );
  registerBackupActions(app, ctx, RESELLER_DOOR);
}

/** Backup create, restore and delete (jobs), through `door`. */
export function registerBackupActions(app: App, ctx: AppContext, door: ServiceDoor): void {
  const accepted = {
    tags: [door.tag('Backups')],
    body: EmptyBody,
    response: { 200: EmptyList },
    successHeaders: JOB_HEADERS,
  };

  app.post(
    door.url('backup/create'),
    door.route(
      {
        ...accepted,
        operationId: door.operationId('createBackup'),
        summary: 'Back up the service',
        description: `A manual backup; the oldest scheduled backups are rotated out to make room within the service’s \`backup\` GB (400 \`backup_quota_exceeded\` if that is not enough, \`backups_disabled\` if it is 0).${JOB_ANSWER}`,
        params: ServiceParams,
      },
      'backup.create',
    ),
    async (request, reply) => {
      return acceptOperation(ctx, request, reply, backupCreateOperation('manual'), door);
    },
  );

  app.post(
    door.url('backup/restore/:backup_id'),
    door.route(
      {
        ...accepted,
        operationId: door.operationId('restoreBackup'),
        summary: 'Restore a backup',
        description: `Puts the server’s disk back as the backup holds it.${JOB_ANSWER}`,
        params: BackupParams,
      },
      'backup.restore',
    ),
    async (request, reply) => {
      return acceptOperation(
        ctx,
        request,
        reply,
        backupRestoreOperation(pathId(request.params.backup_id, 'backup_not_found')),
        door,
      );
    },
  );

  app.post(
    door.url('backup/delete/:backup_id'),
    door.route(
      {
        ...accepted,
        operationId: door.operationId('deleteBackup'),
        summary: 'Delete a backup',
        description: `Frees the backup’s space.${JOB_ANSWER}`,
        params: BackupParams,
      },
      'backup.delete',
    ),
    async (request, reply) => {
      const result = await acceptOperation(
        ctx,
        request,
        reply,
        backupDeleteOperation(pathId(request.params.backup_id, 'backup_not_found'), ctx.clock.now()),
        door,
      );
      // Variant A carries a human message for a successful deletion
      // (docs/design/contract.md#envelopes).
      if (request.variant === 'A') answerMessage(reply, 'Backup deletion accepted');
      return result;
    },
  );
}
