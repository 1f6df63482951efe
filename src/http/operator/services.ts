import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { groupThousands } from '../../domain/code-unit-text.ts';
import { ApiError } from '../../domain/errors.ts';
import { STATUSES } from '../../domain/status-machine.ts';
import { backupDeps } from '../../jobs/backup-chain.ts';
import { verifyBackup } from '../../jobs/backup-verify.ts';
import { requestMigration } from '../../jobs/migration-queue.ts';
import { projectedState } from '../../jobs/queue.ts';
import type { Catalog } from '../../store/catalog-cache.ts';
import { recordAudit } from '../../store/repos/audit.ts';
import { listBackups } from '../../store/repos/backups.ts';
import { findHostState, findVmMac } from '../../store/repos/hosts.ts';
import { listServiceJobs } from '../../store/repos/jobs.ts';
import {
  DOMAIN_MATCHES,
  listServices,
  MIN_SUBSTRING,
  SERVICE_SORTS,
  type ServiceSort,
  sortKeyOf,
  TOTAL_CAP,
} from '../../store/repos/service-list.ts';
import { ipv6Of } from '../../store/repos/service-network.ts';
import { findService, type Service } from '../../store/repos/services.ts';
import { listSuspensions } from '../../store/repos/suspensions.ts';
import { serviceMonthTraffic } from '../../store/repos/traffic.ts';
import { operatorBackupView, registerBackupActions } from '../actions/backups.ts';
import { registerConsoleActions } from '../actions/console.ts';
import { registerReinstallActions } from '../actions/reinstall.ts';
import { registerRescueActions } from '../actions/rescue.ts';
import { registerReverseDnsActions } from '../actions/reverse-dns.ts';
import { registerScheduleActions } from '../actions/schedules.ts';
import { registerServiceActions, type ServiceDoor } from '../actions/service-actions.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { pathId } from '../path-id.ts';
import { auditContext, readAuditContext } from '../plugins/audit.ts';
import { operatorCaller, requireRole } from '../plugins/authenticate.ts';
import { InputId, isUuid, ServiceParams, StringEnum } from '../schemas/common.ts';
import { operatorJobView } from '../schemas/operator.ts';
import { detailsView, JobPayload, jobView } from '../schemas/service-views.ts';
import {
  BackupVerifyPayload,
  JOB_HEADERS,
  ServiceDetailsPayload,
  ServiceListPayload,
  type ServiceSummaryPayload,
} from '../schemas/services.ts';
import type { ConsoleOptions } from '../service-console/consoles.ts';
import { type ServiceRequest, serviceIdOf } from '../service-id.ts';
import { operatorRoute } from './operator-route.ts';
import { decodeCursor, encodeCursor, limitOf, PageQuery } from './paging.ts';

/** A service in the list, with its product's and plan's names from the catalogue. */
function summaryView(s: Service, catalog: Catalog): Static<typeof ServiceSummaryPayload> {
  const plan = catalog.plansByProduct
    .get(s.productId)
    ?.find((p) => p.cpu === s.cpu && p.ram === s.ram && p.hdd === s.hdd);
  return {
    service_id: s.id,
    reseller_id: s.resellerId,
    status: s.status,
    projected_status: s.projectedStatus,
    domain_name: s.domainName,
    product_id: s.productId,
    product_name: catalog.byId.get(s.productId)?.name ?? null,
    plan_id: plan?.id ?? null,
    plan_name: plan?.name ?? null,
    ip: s.ips[0] ?? '',
    cpu: s.cpu,
    ram: s.ram,
    hdd: s.hdd,
    ip_count: s.ipCount,
    backup: s.backup,
    host_id: s.hostId,
    pending_jobs: s.pendingJobs,
    created_at: new Date(s.createdAt).toISOString(),
    terminated_at: s.terminatedAt === null ? null : new Date(s.terminatedAt).toISOString(),
  };
}

const MigrateBody = Type.Object({
  host_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'The destination host; absent: the one the placement rule picks',
    }),
  ),
});
const MigratePayload = Type.Object({ job: JobPayload });
const BackupIdParams = Type.Object({ backup_id: InputId('The backup') });

const ListQuery = Type.Object({
  reseller_id: Type.Optional(InputId('Only this reseller’s services (an unknown one: none)')),
  status: Type.Optional(StringEnum(STATUSES)),
  host_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Only the services on this host (an unknown one: none)',
    }),
  ),
  product_id: Type.Optional(InputId('Only the services of this product (an unknown one: none)')),
  q: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 253,
      description: `Services whose domain name contains it (or starts with it: \`match=prefix\`; a \`q\` shorter than ${MIN_SUBSTRING} characters always matches at the start), whose id starts with it, or that hold it as an IPv4 address now; upper and lower case alike`,
    }),
  ),
  match: Type.Optional(
    StringEnum(DOMAIN_MATCHES, {
      description:
        'How `q` matches domain names: `contains` (anywhere, the default) or `prefix` (at the start)',
    }),
  ),
  sort: Type.Optional(
    StringEnum(SERVICE_SORTS, {
      description:
        'The order: `-created` (newest first, the default), `created`, `domain`, `-domain` (byte order), `status`, `-status` (by name); ties by creation in the same direction',
    }),
  ),
  ...PageQuery,
});

/** The list's cursor: the page goes on after (`a`) or before (`b`) this sort key and id, in this order. */
const CURSOR_SHAPE = ['string', 'string', 'string', 'string'] as const;

const DetailsQuery = Type.Object({
  reveal: Type.Optional(
    StringEnum(['true', 'false'], {
      description:
        '`true`: the answer holds the root password (admin only, 403 `insufficient_role`; recorded in the audit log as `service.reveal_password`)',
    }),
  ),
});

/** The service the path names, whoever owns it; 404 `service_not_found` if none. */
async function anyService(ctx: AppContext, request: ServiceRequest): Promise<Service> {
  const service = await findService(ctx.store.db, serviceIdOf(request));
  if (!service) throw new ApiError('service_not_found', 'Service not found');
  return service;
}

/** The operator API's tag of each group of the reseller API's operations; the backup groups' is `Operator backups`. */
const OPERATOR_TAGS: Readonly<Record<string, string>> = {
  'Service actions': 'Operator service actions',
  'Reverse DNS': 'Operator reverse DNS',
};

/** The operator API's door to the reseller API's operations: any reseller's service, acting for that reseller. */
function operatorDoor(ctx: AppContext): ServiceDoor {
  return {
    url: (path) => `${OPS}/services/:service_id/${path}`,
    // A route with an audit action is an operation; one without (a GET of rdns, backups...) a read.
    route: (schema, audit) => operatorRoute(schema, audit, audit === undefined ? undefined : 'operate'),
    operationId: (name) => `service${name.charAt(0).toUpperCase()}${name.slice(1)}`,
    tag: (group) => OPERATOR_TAGS[group] ?? 'Operator backups',
    target: async (request) => {
      const service = await anyService(ctx, request);
      return { resellerId: service.resellerId, serviceId: service.id };
    },
  };
}

const tags = ['Operator services'];

/**
 * `OPS/services...`: services across resellers, their details and every operation on them
 * (docs/design/contract.md#operator-api).
 */
export function registerOperatorServiceRoutes(app: App, ctx: AppContext, options: ConsoleOptions = {}): void {
  const { db } = ctx.store;

  app.get(
    `${OPS}/services`,
    operatorRoute({
      operationId: 'listServices',
      tags,
      summary: 'List services across resellers',
      description: `Filtered by reseller, status, host, product and \`q\` (a domain name or part of one, an id prefix or an IP address), in the order \`sort\` asks (newest first by default), a page at a time, with cursors to the next and the previous page and how many services match (\`total\`, counted up to ${groupThousands(TOTAL_CAP)}). A page starts after (or before) the last (first) service of the one its cursor came from, so services ordered while you page neither shift a page nor are skipped or repeated. A cursor belongs to its order: with another \`sort\` it is 400 \`invalid_cursor\`. Each service names its product and plan.`,
      querystring: ListQuery,
      response: { 200: ServiceListPayload },
    }),
    async (request) => {
      const query = request.query;
      const limit = limitOf(query);
      const sort: ServiceSort = query.sort ?? '-created';
      let from: { direction: 'after' | 'before'; key: string; id: string } | undefined;
      if (query.cursor) {
        const [direction, cursorSort, key, id] = decodeCursor(
          ctx.keys.cursorKey,
          'services',
          query.cursor,
          CURSOR_SHAPE,
        );
        if ((direction !== 'a' && direction !== 'b') || cursorSort !== sort)
          throw new ApiError('invalid_cursor', 'cursor is not one this list gave in this order');
        from = { direction: direction === 'a' ? 'after' : 'before', key, id };
      }
      // A reseller or product id that is no UUID names none: an empty list, as for an unknown one.
      const none =
        (query.reseller_id !== undefined && !isUuid(query.reseller_id)) ||
        (query.product_id !== undefined && !isUuid(query.product_id));
      if (none) return { items: [], next_cursor: null, prev_cursor: null, total: 0, total_capped: false };
      const [page, catalog] = await Promise.all([
        listServices(db, {
          resellerId: query.reseller_id?.toLowerCase(),
          status: query.status,
          hostId: query.host_id,
          productId: query.product_id?.toLowerCase(),
          q: query.q,
          match: query.match,
          sort,
          from,
          limit,
        }),
        ctx.catalog.get(),
      ]);
      const cursor = (direction: 'a' | 'b', s: Service | undefined) =>
        s === undefined
          ? null
          : encodeCursor(ctx.keys.cursorKey, 'services', [direction, sort, sortKeyOf(s, sort), s.id]);
      const first = page.services[0];
      const last = page.services[page.services.length - 1];
      // Read forwards, the page has a previous one when it was reached by a cursor; read
      // backwards, a next one always (the cursor's service) and a previous one when more were read.
      const backwards = from?.direction === 'before';
      return {
        items: page.services.map((s) => summaryView(s, catalog)),
        next_cursor: backwards || page.more ? cursor('a', last) : null,
        prev_cursor: backwards ? (page.more ? cursor('b', first) : null) : from ? cursor('b', first) : null,
        total: page.total,
        total_capped: page.capped,
      };
    },
  );

  app.get(
    `${OPS}/services/:service_id`,
    operatorRoute({
      operationId: 'getService',
      tags,
      summary: 'A service with its host, jobs and backups',
      description:
        'Everything the reseller’s details show (the login, and its password only with `reveal=true`), with its reseller, its application, its projected status, its host, its latest jobs, its backups, its product’s OS templates and its suspension history.',
      params: ServiceParams,
      querystring: DetailsQuery,
      response: { 200: ServiceDetailsPayload },
    }),
    async (request) => {
      const reveal = request.query.reveal === 'true';
      const service = await anyService(ctx, request);
      if (reveal) {
        // A reveal is recorded whether it is allowed or refused (an operator without the role
        // asking for a customer's password is what an audit is read for).
        const subject = {
          target: { type: 'service' as const, id: service.id },
          serviceId: service.id,
          resellerId: service.resellerId,
        };
        const audit = readAuditContext(request, 'service.reveal_password');
        try {
          requireRole(operatorCaller(request), 'secret');
        } catch (err) {
          if (err instanceof ApiError) await recordAudit(db, audit, subject, ctx.clock.now(), err.code);
          throw err;
        }
        await recordAudit(db, audit, subject, ctx.clock.now());
      }

      const [jobs, backups, host, mac, catalog, ipv6, traffic, suspensions] = await Promise.all([
        listServiceJobs(db, service.id, 50),
        listBackups(db, service.id),
        service.hostId === null ? undefined : findHostState(db, service.hostId),
        findVmMac(db, service.id),
        ctx.catalog.get(),
        ipv6Of(db, service.id),
        serviceMonthTraffic(ctx.store.reads, service.id, ctx.clock.now()),
        listSuspensions(db, service.id),
      ]);
      // What a reinstall may choose: retired templates are no longer offered.
      const templates = (catalog.byId.get(service.productId)?.osTemplates ?? []).filter((t) => !t.retired);
      const current = jobs.find((j) => j.status === 'running') ?? jobs.findLast((j) => j.status === 'queued');
      const details = detailsView(service, current, ctx.secretBox, ctx.config.rescueMaxMs, ipv6, {
        ...traffic,
        quotaGb: catalog.byId.get(service.productId)?.trafficGb ?? null,
        over: catalog.byId.get(service.productId)?.trafficOver ?? null,
      });
      return {
        ...details,
        password: reveal ? details.password : null,
        reseller_id: service.resellerId,
        client_id: service.clientId,
        projected_status: projectedState(service).status,
        pending_jobs: service.pendingJobs,
        host: service.hostId !== null && host ? { host_id: service.hostId, state: host, mac } : null,
        updated_at: new Date(service.updatedAt).toISOString(),
        jobs: jobs.map(operatorJobView),
        backups: backups.map(operatorBackupView),
        os_templates: templates.map((t) => ({
          template_id: t.templateId,
          name: t.name,
          available: !catalog.unavailableTemplates.has(t.templateId),
        })),
        suspensions: suspensions.map((x) => ({
          suspended_at: new Date(x.suspendedAt).toISOString(),
          suspended_by: { ...x.suspendedBy },
          reason: x.reason,
          lifted_at: x.liftedAt === null ? null : new Date(x.liftedAt).toISOString(),
          lifted_by: x.liftedBy && { ...x.liftedBy },
        })),
      };
    },
  );

  app.post(
    `${OPS}/services/:service_id/migrate`,
    operatorRoute(
      {
        operationId: 'migrateService',
        tags: ['Operator service actions'],
        summary: 'Migrate the server to another host',
        description:
          'Queues a `migrate` job: the server moves to `host_id`, or without it to the host the placement rule picks (most free RAM among the active, answering hosts with room). A running server moves live and keeps running; a stopped one moves cold. It keeps its id, addresses and disks. A running, stopped or suspended service only (a suspended one moves cold and stays suspended; otherwise 400 `invalid_state`). An unknown host is 404 `host_not_found`; the host it is on already 400 `same_host`; a draining or evacuating host 400 `host_not_active`; one that does not answer 400 `host_unreachable`. Answers the job, its id also in `X-Job-Id`.',
        params: ServiceParams,
        body: MigrateBody,
        successHeaders: JOB_HEADERS,
        response: { 200: MigratePayload },
      },
      'service.migrate',
      'operate',
    ),
    async (request, reply) => {
      const service = await anyService(ctx, request);
      const outcome = await requestMigration(
        db,
        ctx.config.driver,
        service.id,
        request.body.host_id ?? null,
        auditContext(request),
        ctx.clock.now(),
      );
      ctx.jobSignal.notify();
      reply.header('x-job-id', outcome.id);
      request.log.info({ serviceId: service.id, jobId: outcome.id, action: 'migrate' }, 'job queued');
      return { job: jobView(outcome) };
    },
  );

  const { archive } = backupDeps(ctx);
  app.post(
    `${OPS}/backups/:backup_id/verify`,
    operatorRoute(
      {
        operationId: 'verifyBackup',
        tags: ['Operator backups'],
        summary: 'Verify a backup',
        description:
          'Reads the backup back from the backup store and checks every segment (its SHA-256, its seal, its length): `ok` is true when all are as written; `bad` names each that is not, with where its bytes go on the guest disk (segment -1: the manifest itself, which is missing, damaged or sealed with another key). Changes nothing. 404 `backup_not_found`; a backup not in the backup store (a legacy one kept on its host, one being taken or that failed) 400 `invalid_state`; a backup store that does not answer 503 `store_unavailable`.',
        params: BackupIdParams,
        response: { 200: BackupVerifyPayload },
      },
      undefined,
      'operate',
    ),
    async (request) => {
      const r = await verifyBackup(db, archive, pathId(request.params.backup_id, 'backup_not_found'));
      return { backup_id: r.backupId, ok: r.ok, segments: r.segments, bad: [...r.bad] };
    },
  );

  const door = operatorDoor(ctx);
  registerServiceActions(app, ctx, door);
  registerReinstallActions(app, ctx, door);
  registerRescueActions(app, ctx, door);
  registerBackupActions(app, ctx, door);
  registerScheduleActions(app, ctx, door);
  registerReverseDnsActions(app, ctx, door);
  registerConsoleActions(app, ctx, door, options.consoles);
}
