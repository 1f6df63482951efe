import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { ApiError } from '../domain/errors.ts';
import { seedHosts } from '../drivers/hosts.ts';
import { hostView } from '../http/operator/hosts.ts';
import { addHost, changeHost } from '../jobs/host-operations.ts';
import { requestMigration } from '../jobs/migration-queue.ts';
import { changeHostState, deleteHost, findHostByIdOrName, listHostsPage } from '../store/repos/hosts.ts';
import { findService } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';
import { cliAudit } from './audit.ts';
import { CommandError, type Output, one, parseArguments, UsageError } from './output.ts';

/** A host as `--json` prints it: the operator API's view of it. */
const hostJson = hostView;

type HostJson = ReturnType<typeof hostJson>;

function line(h: HostJson): string {
  const evac = h.evacuation
    ? `\tevacuation: ${h.evacuation.done} done, ${h.evacuation.failed} failed, ${h.evacuation.running} running, ${h.evacuation.left} left`
    : '';
  return (
    `${h.name}\t${h.host_id}\t${h.state}\t${h.health}\t` +
    `cpu ${h.used.cpu}/${h.capacity.cpu}\tram ${h.used.ram_gb}/${h.capacity.ram_gb} GB\t` +
    `disk ${h.used.disk_gb}/${h.capacity.disk_gb} GB\t${h.services} servers${h.uri ? `\t${h.uri}` : ''}` +
    `${h.rescue_image ? `\trescue image ${h.rescue_image}` : ''}${evac}`
  );
}

/** A whole number option, or undefined if not given; a usage error if it is not a number. */
function amount(values: Record<string, unknown>, name: string): number | undefined {
  const v = values[name];
  if (typeof v !== 'string') return undefined;
  if (!/^-?[0-9]+$/.test(v)) throw new UsageError(`--${name} must be a whole number, got "${v}"`);
  return Number(v);
}

const HOST_OPTIONS = {
  name: { type: 'string' },
  driver: { type: 'string' },
  uri: { type: 'string' },
  cpu: { type: 'string' },
  ram: { type: 'string' },
  disk: { type: 'string' },
  backup: { type: 'string' },
  to: { type: 'string' },
  'rescue-image': { type: 'string' },
} as const;

/** `--rescue-image PATH|none`: the path, null for `none` (the global one), undefined if not given. */
function rescueImage(value: string | undefined): string | null | undefined {
  return value === 'none' ? null : value;
}

/**
 * `vrp host add|list|show|update|drain|activate|evacuate|remove|migrate` (docs/cli.md): the same
 * checks and writes as the operator API's OPS/hosts routes (domain/host-input.ts,
 * store/repos/hosts.ts, jobs/host-operations.ts), on the store directly.
 */
export async function hostCommand(
  db: Kysely<Database>,
  args: string[],
  out: Output,
  config: Config,
): Promise<void> {
  const [sub, ...rest] = args;
  const driver = config.driver;
  const { values, positionals } = parseArguments(() =>
    parseArgs({ args: rest, options: HOST_OPTIONS, allowPositionals: true, strict: true }),
  );
  const given = Object.keys(values);
  const allow = (command: string, names: readonly string[]) => {
    const wrong = given.find((g) => !names.includes(g));
    if (wrong !== undefined) throw new UsageError(`host ${command}: unknown option --${wrong}`);
  };
  const now = () => Date.now();
  // The settings' hosts seed a fresh store whoever opens it first: the server, or this command.
  await seedHosts(db, driver, driver === 'libvirt' ? config.libvirtHosts : config.simulatedHosts, now());
  try {
    if (sub === 'list') {
      allow(sub, []);
      if (positionals.length > 0)
        throw new UsageError(`host list: unexpected arguments: ${positionals.join(' ')}`);
      const hosts = (await listHostsPage(db, driver, { limit: 100_000 })).map(hostJson);
      out.result(hosts, (l) => (l.length === 0 ? '(no hosts)' : l.map(line).join('\n')));
      return;
    }
    if (sub === 'add') {
      allow(sub, ['driver', 'uri', 'cpu', 'ram', 'disk', 'backup']);
      const name = one(positionals, 'host add', 'NAME');
      const cpu = amount(values, 'cpu');
      const ramGb = amount(values, 'ram');
      const diskGb = amount(values, 'disk');
      if (cpu === undefined || ramGb === undefined || diskGb === undefined)
        throw new UsageError('host add: --cpu, --ram and --disk are required');
      const host = await addHost(
        db,
        driver,
        {
          name,
          driver: values.driver ?? driver,
          uri: values.uri,
          cpu,
          ramGb,
          diskGb,
          backupGb: amount(values, 'backup'),
        },
        now,
        cliAudit('host.create'),
      );
      out.result(
        hostJson(host),
        (h) =>
          `host "${h.name}" added (${h.host_id})${h.health === 'unreachable' ? '; its connection does not answer: it takes no server until it does' : ''}`,
      );
      return;
    }
    if (sub === 'migrate') {
      allow(sub, ['to']);
      const serviceId = one(positionals, 'host migrate', 'SERVICE_ID');
      const service = await findService(db, serviceId.toLowerCase());
      if (!service) throw new CommandError(`no service ${serviceId}`, { error_code: 'service_not_found' });
      const to = values.to === undefined ? null : (await findHostByIdOrName(db, driver, values.to)).id;
      const job = await requestMigration(db, driver, service.id, to, cliAudit('service.migrate'), now());
      out.result(
        { job_id: job.id, service_id: service.id, host_id: to },
        (v) => `migration of ${v.service_id} queued as job ${v.job_id} (a running server picks it up)`,
      );
      return;
    }
    const verbs = ['show', 'update', 'drain', 'activate', 'evacuate', 'remove'];
    if (sub === undefined || !verbs.includes(sub)) throw new UsageError(`unknown command: host ${sub ?? ''}`);
    allow(sub, sub === 'update' ? ['name', 'uri', 'cpu', 'ram', 'disk', 'backup', 'rescue-image'] : []);
    const host = await findHostByIdOrName(db, driver, one(positionals, `host ${sub}`, 'HOST'));
    if (sub === 'show') {
      out.result(hostJson(host), line);
      return;
    }
    if (sub === 'update') {
      const changed = await changeHost(
        db,
        driver,
        host.id,
        {
          name: values.name,
          uri: values.uri,
          cpu: amount(values, 'cpu'),
          ramGb: amount(values, 'ram'),
          diskGb: amount(values, 'disk'),
          backupGb: amount(values, 'backup'),
          rescueImage: rescueImage(values['rescue-image']),
        },
        now,
        cliAudit('host.update'),
      );
      out.result(hostJson(changed), (h) => `host "${h.name}" changed\n${line(h)}`);
      return;
    }
    if (sub === 'remove') {
      await deleteHost(db, driver, host.id, now(), cliAudit('host.delete'));
      out.result({ host_id: host.id, name: host.name, removed: true }, (v) => `host "${v.name}" removed`);
      return;
    }
    const change = sub === 'drain' ? 'drain' : sub === 'activate' ? 'activate' : 'evacuate';
    const done = await changeHostState(db, driver, host.id, change, now(), cliAudit(`host.${change}`));
    out.result(hostJson(done), (h) => `host "${h.name}" is ${h.state}`);
  } catch (err) {
    if (err instanceof ApiError) throw new CommandError(err.message, { error_code: err.code });
    throw err;
  }
}
