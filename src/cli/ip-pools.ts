import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { commaList } from '../domain/comma-list.ts';
import { ApiError } from '../domain/errors.ts';
import { seedHosts } from '../drivers/hosts.ts';
import { poolView } from '../http/operator/ip-pools.ts';
import { createPool, deletePool, listPools, seedDefaultPool, updatePool } from '../store/repos/ip-pools.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, type Output, one, parseArguments, UsageError } from './output.ts';

type PoolJson = ReturnType<typeof poolView>;

function line(p: PoolJson): string {
  const range = p.family === 'ipv4' ? `${p.first}-${p.last}` : `/${p.assign_prefix_length} each`;
  const reserved = p.reserved.length > 0 ? `\treserved ${p.reserved.join(',')}` : '';
  const hosts = p.host_ids.length > 0 ? p.host_ids.join(',') : '(hosts no pool names)';
  return (
    `${p.name}\t${p.pool_id}\t${p.family}\t${p.network}\tgateway ${p.gateway}\t${range}\t` +
    `used ${p.usage.used}/${p.usage.total}\thosts ${hosts}${reserved}`
  );
}

const OPTIONS = {
  name: { type: 'string' },
  family: { type: 'string' },
  network: { type: 'string' },
  gateway: { type: 'string' },
  first: { type: 'string' },
  last: { type: 'string' },
  reserved: { type: 'string' },
  'assign-prefix': { type: 'string' },
  hosts: { type: 'string' },
} as const;

/** A comma-separated list option (`--hosts a,b`; empty: none), undefined if not given. */
const list = (v: string | undefined) => (v === undefined ? undefined : commaList(v));

/**
 * `vrp ip-pool list|create|update|delete` (docs/cli.md): the same checks and writes as the
 * operator API's OPS/ip-pools routes (domain/ip-pools.ts, store/repos/ip-pools.ts), on the
 * store directly. A pool is named by its id or its name.
 */
export async function ipPoolCommand(
  db: Kysely<Database>,
  args: string[],
  out: Output,
  config: Config,
): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArguments(() =>
    parseArgs({ args: rest, options: OPTIONS, allowPositionals: true, strict: true }),
  );
  const given = Object.keys(values);
  const allow = (command: string, names: readonly string[]) => {
    const wrong = given.find((g) => !names.includes(g));
    if (wrong !== undefined) throw new UsageError(`ip-pool ${command}: unknown option --${wrong}`);
  };
  const now = Date.now();
  // A fresh store gets its hosts and the pool default whoever opens it first: the server, or this.
  await seedHosts(
    db,
    config.driver,
    config.driver === 'libvirt' ? config.libvirtHosts : config.simulatedHosts,
    now,
  );
  await seedDefaultPool(db, config.simulatedIpPool, now);
  const find = async (ref: string) => {
    const pool = (await listPools(db)).find((p) => p.id === ref || p.name === ref);
    if (!pool) throw new CommandError(`no address pool ${ref}`, { error_code: 'pool_not_found' });
    return pool;
  };
  try {
    if (sub === 'list') {
      allow(sub, []);
      if (positionals.length > 0)
        throw new UsageError(`ip-pool list: unexpected arguments: ${positionals.join(' ')}`);
      const pools = (await listPools(db)).map(poolView);
      out.result(pools, (l) => (l.length === 0 ? '(no address pools)' : l.map(line).join('\n')));
      return;
    }
    if (sub === 'create') {
      allow(sub, ['family', 'network', 'gateway', 'first', 'last', 'reserved', 'assign-prefix', 'hosts']);
      const name = one(positionals, 'ip-pool create', 'NAME');
      if (values.family === undefined || values.network === undefined)
        throw new UsageError('ip-pool create: --family and --network are required');
      const assign = values['assign-prefix'];
      if (assign !== undefined && !/^[0-9]{1,3}$/.test(assign))
        throw new UsageError(`--assign-prefix must be a whole number, got "${assign}"`);
      const pool = await createPool(
        db,
        {
          name,
          family: values.family,
          network: values.network,
          gateway: values.gateway,
          first: values.first,
          last: values.last,
          reserved: list(values.reserved),
          assignPrefixLength: assign === undefined ? undefined : Number(assign),
          hosts: list(values.hosts) ?? [],
        },
        now,
        cliAudit('ip_pool.create'),
      );
      out.result(poolView(pool), (p) => `address pool "${p.name}" created (${p.pool_id})\n${line(p)}`);
      return;
    }
    if (sub === 'update') {
      allow(sub, ['name', 'gateway', 'first', 'last', 'reserved', 'hosts']);
      const pool = await find(one(positionals, 'ip-pool update', 'POOL'));
      const changed = await updatePool(
        db,
        pool.id,
        {
          name: values.name,
          gateway: values.gateway,
          first: values.first,
          last: values.last,
          reserved: list(values.reserved),
          hosts: list(values.hosts),
        },
        now,
        cliAudit('ip_pool.update'),
      );
      out.result(poolView(changed), (p) => `address pool "${p.name}" changed\n${line(p)}`);
      return;
    }
    if (sub === 'delete') {
      allow(sub, []);
      const pool = await find(one(positionals, 'ip-pool delete', 'POOL'));
      await deletePool(db, pool.id, now, cliAudit('ip_pool.delete'));
      out.result(
        { pool_id: pool.id, name: pool.name, removed: true },
        (v) => `address pool "${v.name}" removed`,
      );
      return;
    }
    throw new UsageError(`unknown command: ip-pool ${sub ?? ''}`);
  } catch (err) {
    if (err instanceof ApiError) throw new CommandError(err.message, { error_code: err.code });
    throw err;
  }
}
