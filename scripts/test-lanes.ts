/**
 * Test files run in a few long-lived processes ("lanes"), not one process each. Starting a
 * Node process that loads Fastify, Kysely and pino and strips the types of our sources costs
 * about a second of CPU; once per file that was a third of the suite's CPU time.
 *
 * Every lane is one file for Node's test runner, so its results reach the runner's reporter as
 * before. Lanes take the test files from one shared queue, one at a time, until none is left:
 * a lane that drew quick files takes more of them, and all lanes end at about the same time.
 * See scripts/test-lane.ts for what a lane does with a file.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The test files that start real VMs. They run one at a time across the lanes: libvirt defines
 * domains one after another, and where a define takes 30-50 s (a /dev/kvm libvirt's QEMU cannot
 * open: docs/libvirt.md, "Provisioning time"), several files' defines queued past the driver's
 * 120 s timeout.
 */
export const ONE_AT_A_TIME =
  /^test\/(drivers\/libvirt(-hosts|-backups|-contract|-selfservice|-traffic|-seed-replace|-leftovers|-template-sweep|-guest-suspend)?|e2e\/libvirt-(api|backups|fleet|kvm-fallback|password|power|provision|selfservice|storage-full))\.test\.ts$/;

/**
 * Real-VM files whose VMs live on test hosts of their own (scripts/libvirt/test-host.sh), each
 * host its own libvirtd: their defines queue in those daemons, not in the system one. They run
 * one at a time among themselves, beside the system daemon's real-VM file of the moment.
 */
const ON_TEST_HOSTS =
  /^test\/(drivers\/libvirt-(hosts|backups|contract|leftovers|template-sweep)|e2e\/libvirt-(fleet|backups|password|storage-full))\.test\.ts$/;

/**
 * The group a real-VM file runs in, one file of a group at a time across the lanes: the system
 * libvirtd's files, or the test hosts' files; undefined for every other file.
 */
export function realVmGroup(file: string): 'system-libvirtd' | 'test-hosts' | undefined {
  if (!ONE_AT_A_TIME.test(file)) return undefined;
  return ON_TEST_HOSTS.test(file) ? 'test-hosts' : 'system-libvirtd';
}

/**
 * A queue of `files` (paths relative to the project) and `lanes` lane files that work it off.
 * `filtered`: the run selects tests by name or `only`; then each lane takes every `lanes`-th
 * file at once instead (scripts/test-lane.ts says why).
 */
export function writeLanes(
  files: readonly string[],
  lanes: number,
  filtered: boolean,
): { dir: string; paths: string[]; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-test-lanes-'));
  const queue = join(dir, 'queue');
  mkdirSync(queue);
  const entries = files.map((f) => [relative('.', f), pathToFileURL(resolve(f)).href]);
  writeFileSync(join(queue, 'files.json'), JSON.stringify(entries));
  const runQueue = pathToFileURL(resolve('scripts/test-lane.ts')).href;
  const count = Math.max(1, Math.min(lanes, files.length));
  const paths = Array.from({ length: count }, (_, i) => {
    const path = join(dir, `lane-${i + 1}.mjs`);
    const lane = filtered ? { index: i, of: count } : undefined;
    writeFileSync(
      path,
      `import { runQueue } from ${JSON.stringify(runQueue)};\nawait runQueue(${JSON.stringify(queue)}, ${JSON.stringify(lane)});\n`,
    );
    return path;
  });
  return { dir, paths, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
