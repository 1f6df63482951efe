import { randomUUID } from 'node:crypto';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import {
  MAX_SCHEDULES_PER_SERVICE,
  nextRunAt,
  parseBsDays,
  parseBsTime,
  scheduleKey,
} from '../../domain/schedules.ts';
import { decide } from '../../domain/status-machine.ts';
import { projectedState } from '../../jobs/queue.ts';
import { recordAudit } from '../../store/repos/audit.ts';
import {
  type BackupSchedule,
  deleteSchedule,
  insertSchedule,
  listSchedules,
  lockServiceForSchedules,
} from '../../store/repos/backup-schedules.ts';
import { findOwnedService, type Service } from '../../store/repos/services.ts';
import { answerMessage, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { BodyServiceId, EmptyBody, EmptyList, Id, InputId, ServiceParams } from '../schemas/common.ts';
import { ownedService, type ServiceRequest } from '../service-id.ts';
import { RESELLER_DOOR, type ServiceDoor } from './service-actions.ts';

const iso = (ms: number) => new Date(ms).toISOString();

const SchedulePayload = Type.Object(
  {
    backup_schedule_id: Id(),
    BsTime: Type.String({ description: '`HH:MM`, 24-hour, UTC', examples: ['03:30'] }),
    BSDays: Type.String({ description: 'Comma-separated days', examples: ['mon,thu'] }),
    timezone: Type.Literal('UTC'),
    next_run_at: Type.String({ format: 'date-time' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'BackupSchedule' },
);

function scheduleView(s: BackupSchedule): Static<typeof SchedulePayload> {
  return {
    backup_schedule_id: s.id,
    BsTime: s.bsTime,
    BSDays: s.bsDays,
    timezone: 'UTC',
    next_run_at: iso(s.nextRunAt),
    created_at: iso(s.createdAt),
  };
}

function sameSchedule(s: BackupSchedule, key: string): boolean {
  try {
    return scheduleKey(parseBsTime(s.bsTime), parseBsDays(s.bsDays)) === key;
  } catch {
    return false;
  }
}

const ScheduleBody = Type.Object({
  service_id: BodyServiceId,
  BsTime: Type.String({ maxLength: 16, description: '`HH:MM`, 24-hour, UTC', examples: ['03:30'] }),
  BSDays: Type.String({
    maxLength: 64,
    description: 'A comma-separated, non-empty, duplicate-free list of `mon,tue,wed,thu,fri,sat,sun`',
    examples: ['mon,thu'],
  }),
});
const ScheduleParams = Type.Object({
  service_id: InputId('The service'),
  backup_schedule_id: InputId('The backup schedule'),
});

/**
 * Schedule changes take effect at once: no job (docs/design/contract.md#backup-schedules). Creating
 * a schedule that exists already (same BsTime, same set of days) answers 200 and adds nothing.
 */
export function registerScheduleRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  app.get(
    `${API}/service/:service_id/backup-schedule`,
    apiRoute('service', {
      operationId: 'backupSchedules',
      tags: ['Backup schedules'],
      summary: 'List the service’s backup schedules',
      description: 'Every schedule of the service, with the time of its next backup.',
      params: ServiceParams,
      response: { 200: Type.Array(SchedulePayload) },
    }),
    async (request) => {
      const service = await ownedService(ctx, request);
      return (await listSchedules(db, service.id)).map(scheduleView);
    },
  );

  registerScheduleActions(app, ctx, RESELLER_DOOR);
}

/** The service `door` finds for the request, read whole; 404 if it has none. */
async function doorService(ctx: AppContext, door: ServiceDoor, request: ServiceRequest): Promise<Service> {
  const { resellerId, serviceId } = await door.target(request);
  const service = await findOwnedService(ctx.store.reads, resellerId, serviceId);
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}

/** Schedule create and delete (no job; they take effect at once), through `door`. */
export function registerScheduleActions(app: App, ctx: AppContext, door: ServiceDoor): void {
  const { db } = ctx.store;
  app.post(
    door.url('backup-schedule/create'),
    door.route(
      {
        operationId: door.operationId('createBackupSchedule'),
        tags: [door.tag('Backup schedules')],
        summary: 'Schedule backups',
        description: `Takes effect at once, no job. The same time and days again answers 200 and adds nothing; at most ${MAX_SCHEDULES_PER_SERVICE} per service (400 \`schedule_limit_reached\`).`,
        params: ServiceParams,
        body: ScheduleBody,
        response: { 200: EmptyList },
      },
      'backup_schedule.create',
    ),
    async (request) => {
      const owned = await doorService(ctx, door, request);
      const time = parseBsTime(request.body.BsTime);
      const days = parseBsDays(request.body.BSDays);
      const key = scheduleKey(time, days);
      const audit = auditContext(request);
      await db.transaction().execute(async (tx) => {
        // Re-read under the service's lock: the state, the duplicate check and the cap hold together.
        const service = await lockServiceForSchedules(tx, owned.id);
        if (!service) throw new ApiError('service_not_found', 'Service not found');
        const decision = decide(projectedState(service), 'schedule_create');
        if (decision.kind !== 'accept')
          throw new ApiError(
            'invalid_state',
            decision.kind === 'invalid' ? decision.message : 'Cannot create a schedule now',
          );
        if (service.backup <= 0) {
          throw new ApiError(
            'backups_disabled',
            'This service has no backup space (backup is 0 GB); upgrade BACKUP first',
          );
        }
        const now = ctx.clock.now();
        const record = (scheduleId: string) =>
          recordAudit(
            tx,
            audit,
            {
              target: { type: 'backup_schedule', id: scheduleId },
              serviceId: service.id,
              resellerId: service.resellerId,
            },
            now,
          );
        const existing = await listSchedules(tx, service.id);
        // The same time and days again (a retried request): already done, not a second backup per slot.
        const same = existing.find((s) => sameSchedule(s, key));
        if (same) return record(same.id);
        if (existing.length >= MAX_SCHEDULES_PER_SERVICE) {
          throw new ApiError(
            'schedule_limit_reached',
            `A service has at most ${MAX_SCHEDULES_PER_SERVICE} backup schedules`,
          );
        }
        const id = randomUUID();
        await insertSchedule(tx, {
          id,
          service_id: service.id,
          reseller_id: service.resellerId,
          bs_time: request.body.BsTime,
          bs_days: request.body.BSDays,
          next_run_at: nextRunAt(time, days, now),
          created_at: now,
        });
        await record(id);
      });
      return [];
    },
  );

  app.post(
    door.url('backup-schedule/delete/:backup_schedule_id'),
    door.route(
      {
        operationId: door.operationId('deleteBackupSchedule'),
        tags: [door.tag('Backup schedules')],
        summary: 'Delete a backup schedule',
        description: 'Takes effect at once, no job; the backups it made stay.',
        params: ScheduleParams,
        body: EmptyBody,
        response: { 200: EmptyList },
      },
      'backup_schedule.delete',
    ),
    async (request, reply) => {
      const service = await doorService(ctx, door, request);
      const decision = decide(projectedState(service), 'schedule_delete');
      if (decision.kind === 'invalid') throw new ApiError('invalid_state', decision.message);
      const id = pathId(request.params.backup_schedule_id, 'backup_schedule_not_found');
      const audit = auditContext(request);
      await db.transaction().execute(async (tx) => {
        if (!(await deleteSchedule(tx, service.id, id))) {
          throw new ApiError('backup_schedule_not_found', 'Backup schedule not found');
        }
        const subject = {
          target: { type: 'backup_schedule', id },
          serviceId: service.id,
          resellerId: service.resellerId,
        };
        await recordAudit(tx, audit, subject, ctx.clock.now());
      });
      if (request.variant === 'A') answerMessage(reply, 'Backup schedule deleted');
      return [];
    },
  );
}
