import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { sumGb } from '../../domain/sizes.ts';
import { addHost, changeHost } from '../../jobs/host-operations.ts';
import {
  changeHostState,
  deleteHost,
  getHost,
  type HostStateChange,
  type HostView,
  listHostsPage,
} from '../../store/repos/hosts.ts';
import { answerMessage } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { auditContext } from '../plugins/audit.ts';
import { EmptyList } from '../schemas/common.ts';
import { HostChangeBody, HostPayload, NewHostBody } from '../schemas/operator.ts';
import { operatorRoute } from './operator-route.ts';
import { decodeCursor, encodeCursor, limitOf, Page, PageQuery, pageOf } from './paging.ts';

const HostParams = Type.Object({
  host_id: Type.String({ minLength: 1, maxLength: 100, description: 'The host' }),
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A host as the operator API shows it. */
export function hostView(h: HostView): Static<typeof HostPayload> {
  const amounts = (a: HostView['capacity']) => ({
    cpu: a.cpu,
    ram_gb: a.ramGb,
    disk_gb: a.diskGb,
    backup_gb: a.backupGb,
  });
  const e = h.evacuation;
  return {
    host_id: h.id,
    name: h.name,
    driver: h.driver,
    uri: h.uri,
    state: h.state,
    health: h.health,
    failing_since: iso(h.failingSince),
    checked_at: iso(h.checkedAt),
    created_at: new Date(h.createdAt).toISOString(),
    capacity: amounts(h.capacity),
    used: amounts(h.used),
    free: {
      cpu: h.capacity.cpu - h.used.cpu,
      ram_gb: h.capacity.ramGb - h.used.ramGb,
      disk_gb: h.capacity.diskGb - h.used.diskGb,
      backup_gb: sumGb([h.capacity.backupGb, -h.used.backupGb]),
    },
    services: h.services,
    rescue_image: h.rescueImage,
    evacuation:
      e === null
        ? null
        : {
            started_at: new Date(e.startedAt).toISOString(),
            done: e.done,
            failed: e.failed,
            running: e.running,
            left: e.left,
          },
  };
}

const tags = ['Hosts'];

/**
 * `OPS/hosts...`: the hosts of the deployment's driver as records: list, add, change, drain,
 * activate, evacuate, remove (docs/operator-api.md#hosts).
 */
export function registerOperatorHostRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const driver = ctx.config.driver;
  const now = () => ctx.clock.now();

  app.get(
    `${OPS}/hosts`,
    operatorRoute({
      operationId: 'listHosts',
      tags,
      summary: 'List hosts',
      description:
        'The hosts of the driver the deployment runs, by name: capacity, use, what is free, how many VMs, whether new servers are placed on it (`active`) or not (`draining`, `evacuating`), whether it answers, and its evacuation’s progress.',
      querystring: Type.Object(PageQuery),
      response: { 200: Page(HostPayload) },
    }),
    async (request) => {
      const limit = limitOf(request.query);
      const after =
        request.query.cursor &&
        decodeCursor(ctx.keys.cursorKey, 'hosts', request.query.cursor, ['string'] as const)[0];
      const hosts = await listHostsPage(db, driver, { afterName: after || undefined, limit: limit + 1 });
      return pageOf(hosts, limit, hostView, (h) => encodeCursor(ctx.keys.cursorKey, 'hosts', [h.name]));
    },
  );

  app.post(
    `${OPS}/hosts`,
    operatorRoute(
      {
        operationId: 'createHost',
        tags,
        summary: 'Add a host',
        description:
          'A new host of the deployment’s driver, `active`. A libvirt host needs its connection `uri`, which is tried (5 s): a host that does not answer is added all the same, with health `unreachable`, and takes no server until it answers. 400 `invalid_host_name`, `host_name_taken`, `host_driver_mismatch`, `invalid_host_uri`.',
        body: NewHostBody,
        response: { 200: HostPayload },
      },
      'host.create',
    ),
    async (request) => {
      const b = request.body;
      const host = await addHost(
        db,
        driver,
        {
          name: b.name,
          driver: b.driver,
          uri: b.uri,
          cpu: b.cpu,
          ramGb: b.ram_gb,
          diskGb: b.disk_gb,
          backupGb: b.backup_gb,
        },
        now,
        auditContext(request),
      );
      return hostView(host);
    },
  );

  app.get(
    `${OPS}/hosts/:host_id`,
    operatorRoute({
      operationId: 'getHost',
      tags,
      summary: 'A host',
      description: 'One host, as the list shows it. An unknown id is 404 `host_not_found`.',
      params: HostParams,
      response: { 200: HostPayload },
    }),
    async (request) => hostView(await getHost(db, driver, request.params.host_id)),
  );

  app.patch(
    `${OPS}/hosts/:host_id`,
    operatorRoute(
      {
        operationId: 'updateHost',
        tags,
        summary: 'Change a host',
        description:
          'Its name, uri, capacity or rescue image; the fields left out stay. A capacity below what is placed on the host is 400 `capacity_below_use`; a new uri is tried as a new host’s is. The other checks are those of adding a host.',
        params: HostParams,
        body: HostChangeBody,
        response: { 200: HostPayload },
      },
      'host.update',
    ),
    async (request) => {
      // No body at all changes nothing, as an empty one does.
      const b = request.body ?? {};
      const host = await changeHost(
        db,
        driver,
        request.params.host_id,
        {
          name: b.name,
          uri: b.uri,
          cpu: b.cpu,
          ramGb: b.ram_gb,
          diskGb: b.disk_gb,
          backupGb: b.backup_gb,
          rescueImage: b.rescue_image,
        },
        now,
        auditContext(request),
      );
      return hostView(host);
    },
  );

  const STATE_DOCS: Readonly<Record<HostStateChange, readonly [string, string, string]>> = {
    drain: [
      'drainHost',
      'Drain a host',
      'No new server is placed on the host (on either driver); the servers on it stay and keep working, resizes included. Draining a draining host changes nothing; draining an evacuating one stops its evacuation (the migrations queued still run).',
    ],
    activate: [
      'activateHost',
      'Activate a host',
      'New servers may be placed on the host again. Activating an evacuating host stops its evacuation (the migrations queued still run).',
    ],
    evacuate: [
      'evacuateHost',
      'Evacuate a host',
      'The host takes no new server (`evacuating`) and its servers are migrated to other hosts, a few at a time (VRP_EVACUATE_CONCURRENCY): live when running, cold when stopped. `evacuation` shows the progress. Evacuating an evacuating host changes nothing.',
    ],
  };
  for (const change of ['drain', 'activate', 'evacuate'] as const) {
    const [operationId, summary, description] = STATE_DOCS[change];
    app.post(
      `${OPS}/hosts/:host_id/${change}`,
      operatorRoute(
        { operationId, tags, summary, description, params: HostParams, response: { 200: HostPayload } },
        `host.${change}`,
      ),
      async (request) => {
        const host = await changeHostState(
          db,
          driver,
          request.params.host_id,
          change,
          now(),
          auditContext(request),
        );
        if (change === 'evacuate') ctx.evacuations.notify();
        return hostView(host);
      },
    );
  }

  app.post(
    `${OPS}/hosts/:host_id/delete`,
    operatorRoute(
      {
        operationId: 'deleteHost',
        tags,
        summary: 'Remove a host',
        description:
          'Removes the host’s record. A host that still holds servers is 409 `host_not_empty`: evacuate it (or migrate or terminate them) first.',
        params: HostParams,
        errorStatuses: [409],
        response: { 200: EmptyList },
      },
      'host.delete',
    ),
    async (request, reply) => {
      await deleteHost(db, driver, request.params.host_id, now(), auditContext(request));
      answerMessage(reply, 'Host removed');
      return [];
    },
  );
}
