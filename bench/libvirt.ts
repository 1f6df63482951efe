/**
 * The real-VM scenario: order -> running with VRP_DRIVER=libvirt on the tiny test
 * template, one VM at a time, and the project's own part of it: the total minus the time the
 * driver spent inside virsh/qemu-img/genisoimage commands (the driver's own timings, logged at
 * debug as `driver command`). The guest's boot is not in the total: a service is `running` once
 * `virsh start` has returned. Runs where VRP_TEST_LIBVIRT_TEMPLATE or `--libvirt-template`
 * names a template; otherwise it prints why it is skipped.
 *
 * `node bench/libvirt.ts [TEMPLATE_DIR]`, or `npm run bench -- --only libvirt`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchToken, prepareStore, smallOrder } from '../test/helpers/e2e.ts';
import { serverProgram, startServer } from '../test/helpers/server-process.ts';
import { median } from './report.ts';
import { writeSection } from './sections.ts';

const API = '/vps_reseller_provider/public/api/v2';
const SECTION = 'libvirt-provisioning';
const START = `<!-- ${SECTION} -->`;
const END = `<!-- /${SECTION} -->`;

export interface ProvisioningRun {
  readonly totalMs: number;
  readonly commandsMs: number;
  readonly commands: Record<string, number>;
}

/** The `driver command` log lines in `text` (pino JSON, one object a line). */
function commandTimings(text: string): { command: string; ms: number }[] {
  const out: { command: string; ms: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"driver command"')) continue;
    try {
      const o = JSON.parse(line) as { command: string; ms: number };
      out.push({ command: o.command, ms: o.ms });
    } catch {
      // not a log line
    }
  }
  return out;
}

/** Runs the scenario `runs` times, one VM at a time; undefined (with the reason printed) without a template. */
export async function libvirtProvisioning(
  template: string | undefined,
  runs = 3,
): Promise<ProvisioningRun[] | undefined> {
  if (!template) {
    console.log(
      'libvirt provisioning: skipped (set VRP_TEST_LIBVIRT_TEMPLATE to the tiny test template to run it)',
    );
    return undefined;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-bench-libvirt-'));
  const { store, app } = await prepareStore(dataDir);
  const order = smallOrder('bench.example.com');
  await store.db
    .updateTable('os_templates')
    .set({ image: template })
    .where('id', '=', order.template_id)
    .execute();
  await store.close();
  const server = await startServer(
    {
      VRP_DATA_DIR: dataDir,
      VRP_DRIVER: 'libvirt',
      // The system daemon's pool `vrp` at the default path (VRP_LIBVIRT_STORAGE), as in
      // production and in the tests: the driver refuses a pool `vrp` found at another path, and
      // the suite's real-VM tests leave it defined at the default one.
      VRP_STOP_TIMEOUT: '2s',
      VRP_LOG_LEVEL: 'debug',
      // No list calls of the reconciler in the middle of the measured commands.
      VRP_RECONCILE_INTERVAL: '3600s',
    },
    undefined,
    undefined,
    serverProgram(),
  );
  const results: ProvisioningRun[] = [];
  try {
    const token = await fetchToken(server.url, app);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${API}/${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : method === 'POST' ? { body: '{}' } : {}),
      });
      const json = (await res.json()) as { data: unknown };
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json.data as never;
    };
    const waitFor = async (id: string, wanted: string) => {
      const until = Date.now() + 300_000;
      for (;;) {
        const s = (await call('GET', `service/${id}/status`)) as { status: string; job: unknown };
        if (s.status === wanted && s.job === null) return;
        if (s.status === 'failed' || Date.now() > until)
          throw new Error(
            `service ${id} is ${s.status}: ${JSON.stringify(await call('GET', `service/${id}/jobs`))}`,
          );
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    for (let i = 0; i < runs; i++) {
      const before = server.output().length;
      const t0 = performance.now();
      const created = (await call('POST', 'service/create-order', order)) as { service_id: string }[];
      const id = created[0]!.service_id;
      await call('POST', `service/${id}/create`);
      await waitFor(id, 'running');
      const totalMs = performance.now() - t0;
      const timings = commandTimings(server.output().slice(before));
      const commands: Record<string, number> = {};
      for (const t of timings) commands[t.command] = (commands[t.command] ?? 0) + t.ms;
      const run = { totalMs, commandsMs: timings.reduce((a, t) => a + t.ms, 0), commands };
      results.push(run);
      console.log(
        `libvirt order -> running #${i + 1}: ${(totalMs / 1000).toFixed(2)} s, in commands ${(run.commandsMs / 1000).toFixed(2)} s (${Object.entries(
          commands,
        )
          .map(([c, ms]) => `${c} ${ms} ms`)
          .join(', ')}), the project's own ${(totalMs - run.commandsMs).toFixed(0)} ms`,
      );
      await call('POST', `service/${id}/terminate`);
      await waitFor(id, 'terminated');
    }
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return results;
}

/** The scenario's section of RESULTS.md, between its markers. */
export function provisioningSection(results: readonly ProvisioningRun[]): string {
  const total = median(results.map((r) => r.totalMs));
  const own = median(results.map((r) => r.totalMs - r.commandsMs));
  const names = [...new Set(results.flatMap((r) => Object.keys(r.commands)))];
  let virt = 'unknown';
  try {
    virt = execFileSync('virsh', ['-c', 'qemu:///system', 'domcapabilities', '--virttype', 'kvm'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .includes('<domain>kvm</domain>')
      ? 'KVM'
      : 'TCG';
  } catch {
    virt = 'TCG (no usable KVM)';
  }
  return [
    START,
    '## Real VMs: order -> running (libvirt, tiny test template)',
    '',
    `Written by \`npm run bench -- --only libvirt\` on ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}: ${results.length} services one at a time, ${virt}, SQLite; order -> running is from \`create-order\` to the status poll (every 20 ms) showing \`running\` with no job; the project's own part is that minus the driver's commands (its own timings, \`driver command\` at log level debug). The guest's boot is not included: a service is running once \`virsh start\` has returned.`,
    '',
    '| figure | median | runs | target | holds |',
    '|---|---:|---|---|---|',
    `| order -> running | ${(total / 1000).toFixed(2)} s | ${results.map((r) => (r.totalMs / 1000).toFixed(2)).join(', ')} | <= 10 s | ${total <= 10_000 ? 'yes' : '**no**'} |`,
    `| the project's own part | ${own.toFixed(0)} ms | ${results.map((r) => (r.totalMs - r.commandsMs).toFixed(0)).join(', ')} | <= 500 ms | ${own <= 500 ? 'yes' : '**no**'} |`,
    ...names.map(
      (n) =>
        `| in \`${n}\` | ${median(results.map((r) => r.commands[n] ?? 0)).toFixed(0)} ms | ${results.map((r) => (r.commands[n] ?? 0).toFixed(0)).join(', ')} | | |`,
    ),
    END,
  ].join('\n');
}

/** Puts `section` into RESULTS.md in place of its earlier one (or at the end), leaving the rest as it is. */
export function writeProvisioningSection(file: string, section: string): void {
  writeSection(file, SECTION, section);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const template = process.argv[2] || process.env['VRP_TEST_LIBVIRT_TEMPLATE'] || undefined;
  process.chdir(join(dirname(fileURLToPath(import.meta.url)), '..'));
  const results = await libvirtProvisioning(template);
  if (results) writeProvisioningSection('bench/RESULTS.md', provisioningSection(results));
}
