import { type Static, Type } from 'typebox';
import type { Config } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { sumGb } from '../../domain/sizes.ts';
import { type HostState, type HostView, listHosts, setHostState } from '../../store/repos/hosts.ts';
import type { ApiHandler } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { auditContext } from '../plugins/audit.ts';
import { HostPayload } from '../schemas/operator.ts';
import { operatorRoute } from './operator-route.ts';
import { decodeCursor, encodeCursor, limitOf, Page, PageQuery, pageOf } from './paging.ts';

const HostParams = Type.Object({
  host_id: Type.String({ minLength: 1, maxLength: 100, description: 'The host' }),
});

/** The hosts the running driver is configured with (VRP_SIM_HOSTS or VRP_LIBVIRT_HOSTS), in that order. */
function configuredHosts(config: Config): { driver: 'simulated' | 'libvirt'; ids: string[] } {
  return config.driver === 'libvirt'
    ? { driver: 'libvirt', ids: config.libvirtHosts.map((h) => h.id) }
    : { driver: 'simulated', ids: config.simulatedHosts.map((h) => h.id) };
}

function hostView(driver: 'simulated' | 'libvirt', h: HostView): Static<typeof HostPayload> {
  const amounts = (a: HostView['capacity']) => ({
    cpu: a.cpu,
    ram_gb: a.ramGb,
    disk_gb: a.diskGb,
    backup_gb: a.backupGb,
  });
  return {
    host_id: h.id,
    driver,
    state: h.state,
    capacity: amounts(h.capacity),
    used: amounts(h.used),
    free: {
      cpu: h.capacity.cpu - h.used.cpu,
      ram_gb: h.capacity.ramGb - h.used.ramGb,
      disk_gb: h.capacity.diskGb - h.used.diskGb,
      backup_gb: sumGb([h.capacity.backupGb, -h.used.backupGb]),
    },
    services: h.services,
  };
}

const tags = ['Hosts'];

/**
 * `OPS/hosts...`: capacity and use of each host; drain and activate
 * (docs/design/contract.md#operator-api).
 */
export function registerOperatorHostRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const { driver, ids } = configuredHosts(ctx.config);
  const vmTable = driver === 'libvirt' ? 'libvirt_vms' : 'sim_vms';

  app.get(
    `${OPS}/hosts`,
    operatorRoute({
      operationId: 'listHosts',
      tags,
      summary: 'List hosts',
      description:
        'The hosts of the configured driver, in configuration order: capacity, use, what is free, how many VMs, and whether new servers are placed on it (`active`) or not (`draining`).',
      querystring: Type.Object(PageQuery),
      response: { 200: Page(HostPayload) },
    }),
    async (request) => {
      const limit = limitOf(request.query);
      const after =
        request.query.cursor &&
        decodeCursor(ctx.keys.cursorKey, 'hosts', request.query.cursor, ['string'] as const)[0];
      const start = after === undefined ? 0 : ids.indexOf(after) + 1;
      const hosts = await listHosts(db, ids.slice(start, start + limit + 1), vmTable);
      return pageOf(
        hosts,
        limit,
        (h) => hostView(driver, h),
        (h) => encodeCursor(ctx.keys.cursorKey, 'hosts', [h.id]),
      );
    },
  );

  const change =
    (state: HostState): ApiHandler<{ params: typeof HostParams; response: { 200: typeof HostPayload } }> =>
    async (request) => {
      const id = request.params.host_id;
      const known =
        ids.includes(id) && (await setHostState(db, id, state, ctx.clock.now(), auditContext(request)));
      const [host] = known ? await listHosts(db, [id], vmTable) : [];
      if (!host)
        throw new ApiError(
          'host_not_found',
          `No host ${JSON.stringify(id)} is configured for the ${driver} driver`,
        );
      return hostView(driver, host);
    };

  app.post(
    `${OPS}/hosts/:host_id/drain`,
    operatorRoute(
      {
        operationId: 'drainHost',
        tags,
        summary: 'Drain a host',
        description:
          'No new server is placed on the host (on either driver); the servers on it stay and keep working, resizes included. Draining a draining host changes nothing.',
        params: HostParams,
        response: { 200: HostPayload },
      },
      'host.drain',
    ),
    change('draining'),
  );

  app.post(
    `${OPS}/hosts/:host_id/activate`,
    operatorRoute(
      {
        operationId: 'activateHost',
        tags,
        summary: 'Activate a host',
        description: 'New servers may be placed on the host again.',
        params: HostParams,
        response: { 200: HostPayload },
      },
      'host.activate',
    ),
    change('active'),
  );
}
