import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import {
  assignServiceIpv6,
  createPool,
  deletePool,
  listPools,
  type PoolView,
  updatePool,
} from '../../store/repos/ip-pools.ts';
import { answerMessage } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { auditContext } from '../plugins/audit.ts';
import { EmptyList, ServiceParams } from '../schemas/common.ts';
import { IpPoolChangeBody, IpPoolPayload, NewIpPoolBody } from '../schemas/operator.ts';
import { Ipv6Payload } from '../schemas/service-views.ts';
import { serviceIdOf } from '../service-id.ts';
import { operatorRoute } from './operator-route.ts';

const PoolParams = Type.Object({
  pool_id: Type.String({ minLength: 1, maxLength: 100, description: 'The pool' }),
});

/** A pool as the operator API shows it. */
export function poolView(p: PoolView): Static<typeof IpPoolPayload> {
  return {
    pool_id: p.id,
    name: p.name,
    family: p.family,
    network: p.network,
    gateway: p.gateway,
    first: p.first,
    last: p.last,
    reserved: [...p.reserved],
    assign_prefix_length: p.assignPrefixLength,
    host_ids: [...p.hostIds],
    usage: { total: p.total, used: p.used },
    created_at: new Date(p.createdAt).toISOString(),
    updated_at: new Date(p.updatedAt).toISOString(),
  };
}

const tags = ['Address pools'];

const BAD_POOL =
  '400 `validation_failed`, `invalid_network`, `gateway_outside_network`, `range_outside_network`, `prefix_too_small`, `pool_overlap`, `pool_name_taken`, `unknown_host`.';

/**
 * `OPS/ip-pools...`: the address pools as records (list, create, change, remove when unused),
 * and `OPS/services/{id}/ipv6`, an IPv6 prefix for an existing service
 * (docs/operator-api.md#address-pools).
 */
export function registerOperatorIpPoolRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const now = () => ctx.clock.now();

  app.get(
    `${OPS}/ip-pools`,
    operatorRoute({
      operationId: 'listIpPools',
      tags,
      summary: 'List address pools',
      description:
        'Every IPv4 range and IPv6 prefix, oldest first (the order in which a host’s pools are tried), with the hosts each serves and how much of it services hold.',
      response: { 200: Type.Array(IpPoolPayload) },
    }),
    async () => (await listPools(db)).map(poolView),
  );

  app.post(
    `${OPS}/ip-pools`,
    operatorRoute(
      {
        operationId: 'createIpPool',
        tags,
        summary: 'Add an address pool',
        description: `An IPv4 range (network, gateway, first and last address handed out, reserved addresses) or an IPv6 prefix (its network and the prefix length each service gets), serving the hosts named; none named: it serves the hosts no pool of its family names. ${BAD_POOL}`,
        body: NewIpPoolBody,
        response: { 200: IpPoolPayload },
      },
      'ip_pool.create',
    ),
    async (request) => {
      const b = request.body;
      const pool = await createPool(
        db,
        {
          name: b.name,
          family: b.family,
          network: b.network,
          gateway: b.gateway,
          first: b.first,
          last: b.last,
          reserved: b.reserved,
          assignPrefixLength: b.assign_prefix_length,
          hosts: b.host_ids ?? [],
        },
        now(),
        auditContext(request),
      );
      return poolView(pool);
    },
  );

  app.patch(
    `${OPS}/ip-pools/:pool_id`,
    operatorRoute(
      {
        operationId: 'updateIpPool',
        tags,
        summary: 'Change an address pool',
        description: `Its name, gateway, range, reserved addresses or hosts (\`host_ids\` replaces the list); the fields left out stay, the family, network and per-service prefix length never change. Addresses services hold outside a narrowed range stay theirs (and are not handed out again once released). An unknown id is 404 \`pool_not_found\`. ${BAD_POOL}`,
        params: PoolParams,
        body: IpPoolChangeBody,
        response: { 200: IpPoolPayload },
      },
      'ip_pool.update',
    ),
    async (request) => {
      const b = request.body ?? {};
      const pool = await updatePool(
        db,
        request.params.pool_id,
        {
          name: b.name,
          gateway: b.gateway,
          first: b.first,
          last: b.last,
          reserved: b.reserved,
          hosts: b.host_ids,
        },
        now(),
        auditContext(request),
      );
      return poolView(pool);
    },
  );

  app.post(
    `${OPS}/ip-pools/:pool_id/delete`,
    operatorRoute(
      {
        operationId: 'deleteIpPool',
        tags,
        summary: 'Remove an address pool',
        description:
          'Removes the pool and its free addresses. A pool any of whose addresses or prefixes a service holds is 409 `pool_in_use`.',
        params: PoolParams,
        errorStatuses: [409],
        response: { 200: EmptyList },
      },
      'ip_pool.delete',
    ),
    async (request, reply) => {
      await deletePool(db, request.params.pool_id, now(), auditContext(request));
      answerMessage(reply, 'Address pool removed');
      return [];
    },
  );

  app.post(
    `${OPS}/services/:service_id/ipv6`,
    operatorRoute(
      {
        operationId: 'serviceAssignIpv6',
        tags,
        summary: 'Give a service an IPv6 prefix',
        description:
          'A prefix of an IPv6 pool serving the service’s host (the one it holds, if it has one already): for services made before their host had an IPv6 pool. The guest applies it when its network configuration is next written and it boots (docs/libvirt.md). 409 `no_ipv6_pool` when no IPv6 pool serves the host or they are full; 400 `invalid_state` for a service without a server.',
        params: ServiceParams,
        errorStatuses: [409],
        response: { 200: Ipv6Payload },
      },
      'service.ipv6',
    ),
    async (request) => {
      const held = await assignServiceIpv6(db, serviceIdOf(request), now(), auditContext(request));
      return { prefix: held.prefix, address: held.address, gateway: held.gateway };
    },
  );
}
