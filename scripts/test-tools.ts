/**
 * The tools the test suite needs from outside npm, found wherever Debian puts them, and
 * installed when this process may (root, with apt-get) — one place for `npm test` and `.ci/run`.
 *
 * - PostgreSQL's server binaries (`initdb`, `pg_ctl`, `postgres`): the PostgreSQL store's tests.
 * - `chromium-headless-shell`: the operator console's tests in a real browser.
 * - `promtool` (Debian's `prometheus`): the check of `GET /metrics`.
 * - `sshd` (Debian's `openssh-server`): the SFTP backup store's tests run it as a server of their own.
 * - `pdns_server` with its SQLite backend (Debian's `pdns-server`, `pdns-backend-sqlite3`) and `dig`
 *   (`bind9-dnsutils`): the reverse DNS tests run PowerDNS Authoritative as a server of their own
 *   and ask it with `dig -x`.
 * - `nginx` (Debian's `nginx`) and `openssl`: the TLS proxy test puts nginx, with a throwaway
 *   certificate openssl makes, in front of a server on loopback.
 * - `systemd-analyze` (Debian's `systemd`): the checks of the systemd units in `deploy/`.
 * - `openssl`: the throwaway certificate of the notification tests' SMTP receiver (STARTTLS).
 * - `buildah` and `debootstrap`: the container image's build and test (`scripts/image.sh test`).
 * - `strace`: the check that the SQLite store answers an order only after the WAL holding it was
 *   flushed to the disk (the system calls of a running server, in order).
 *
 * What is missing after that: outside CI its group of tests is skipped, with one line here
 * naming the tool and the command that installs it (and each skipped test says why); under
 * `CI=true` nothing is skipped for a missing tool, the tests that need it fail.
 *
 * The real-VM tests need QEMU/libvirt and a guest template, which take minutes to install and
 * build: `npm test` never installs them; `scripts/libvirt/setup-ci.sh` does (docs/testing.md).
 *
 * Run as a command (`node scripts/test-tools.ts [--install]`), it prints what it finds, installs
 * what is missing with --install, and exits 1 if something is still missing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type ToolName =
  | 'postgres'
  | 'chromium'
  | 'promtool'
  | 'sshd'
  | 'pdns'
  | 'dig'
  | 'nginx'
  | 'systemd-analyze'
  | 'openssl'
  | 'buildah'
  | 'strace';

export interface Tool {
  readonly name: ToolName;
  /** What it is called in the one line that says it is missing. */
  readonly label: string;
  /** Which tests need it, as "the ... tests" (plural: the line says they "are skipped"). */
  readonly purpose: string;
  /** Debian's packages that bring it. */
  readonly packages: readonly string[];
  /** The test files that need it (the PostgreSQL store is needed by most). */
  readonly neededBy: RegExp;
  /** The environment variable that tells the tests where it is (set by `npm test`). */
  readonly envVar: string;
  /** Where it is on this machine, if it is. */
  find(): string | undefined;
}

/** `name` in a directory of $PATH. */
export function onPath(name: string, path = process.env['PATH'] ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/**
 * The directory of PostgreSQL's server binaries: VRP_TEST_PG_BIN, else one on $PATH that has
 * `initdb` (and `pg_ctl` and `postgres` beside it), else Debian's /usr/lib/postgresql/<version>/bin,
 * the highest version first.
 */
export function findPostgresBin(
  env: NodeJS.ProcessEnv = process.env,
  debianRoot = '/usr/lib/postgresql',
): string | undefined {
  const complete = (dir: string) => ['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(join(dir, b)));
  const set = env['VRP_TEST_PG_BIN'];
  if (set) return complete(set) ? set : undefined;
  const initdb = onPath('initdb', env['PATH'] ?? '');
  if (initdb) {
    const dir = initdb.slice(0, -'/initdb'.length);
    if (complete(dir)) return dir;
  }
  let versions: string[] = [];
  try {
    versions = readdirSync(debianRoot);
  } catch {
    return undefined;
  }
  const byVersion = versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(debianRoot, v, 'bin'));
  return byVersion.find(complete);
}

export const TOOLS: readonly Tool[] = [
  {
    name: 'postgres',
    label: 'PostgreSQL server binaries (initdb, pg_ctl)',
    purpose: 'the tests on the PostgreSQL store',
    packages: ['postgresql'],
    neededBy: /./,
    envVar: 'VRP_TEST_PG_BIN',
    find: () => findPostgresBin(),
  },
  {
    name: 'chromium',
    label: 'chromium-headless-shell',
    purpose: "the operator console's tests in a real browser (test/console/)",
    packages: ['chromium-headless-shell'],
    neededBy: /^test\/console\//,
    envVar: 'VRP_TEST_CHROMIUM',
    find: () => {
      const set = process.env['VRP_TEST_CHROMIUM'];
      if (set) return existsSync(set) ? set : undefined;
      return onPath('chromium-headless-shell') ?? existingPath('/usr/bin/chromium-headless-shell');
    },
  },
  {
    name: 'promtool',
    label: 'promtool',
    purpose:
      'the promtool checks of GET /metrics and of the example alert rules (test/http/metrics.test.ts, test/deploy/alerts.test.ts)',
    packages: ['prometheus'],
    neededBy: /^test\/(http\/metrics|deploy\/alerts)\.test\.ts$/,
    envVar: 'VRP_TEST_PROMTOOL',
    find: () => {
      const set = process.env['VRP_TEST_PROMTOOL'];
      if (set) return existsSync(set) ? set : undefined;
      return onPath('promtool');
    },
  },
  {
    name: 'sshd',
    label: 'sshd (OpenSSH server)',
    purpose: 'the SFTP backup store tests (test/drivers/backup-stores.test.ts)',
    packages: ['openssh-server'],
    neededBy: /^test\/drivers\/backup-stores\.test\.ts$/,
    envVar: 'VRP_TEST_SSHD',
    find: () => {
      const set = process.env['VRP_TEST_SSHD'];
      if (set) return existsSync(set) ? set : undefined;
      return existingPath('/usr/sbin/sshd') ?? onPath('sshd');
    },
  },
  {
    name: 'pdns',
    label: 'PowerDNS Authoritative (pdns_server with its SQLite backend)',
    purpose: 'the reverse DNS tests (test/http/rdns.test.ts)',
    packages: ['pdns-server', 'pdns-backend-sqlite3'],
    neededBy: /^test\/http\/rdns\.test\.ts$/,
    envVar: 'VRP_TEST_PDNS',
    find: () => {
      const set = process.env['VRP_TEST_PDNS'];
      if (set) return existsSync(set) ? set : undefined;
      const server = existingPath('/usr/sbin/pdns_server') ?? onPath('pdns_server');
      // The server without its SQLite backend cannot serve the tests' database.
      const backend = [
        '/usr/lib/x86_64-linux-gnu/pdns',
        '/usr/lib/aarch64-linux-gnu/pdns',
        '/usr/lib/pdns',
      ].some((dir) => existsSync(join(dir, 'libgsqlite3backend.so')));
      return backend ? server : undefined;
    },
  },
  {
    name: 'dig',
    label: 'dig',
    purpose: 'the reverse DNS tests, which ask PowerDNS with dig -x (test/http/rdns.test.ts)',
    packages: ['bind9-dnsutils'],
    neededBy: /^test\/http\/rdns\.test\.ts$/,
    envVar: 'VRP_TEST_DIG',
    find: () => {
      const set = process.env['VRP_TEST_DIG'];
      if (set) return existsSync(set) ? set : undefined;
      return onPath('dig') ?? existingPath('/usr/bin/dig');
    },
  },
  {
    name: 'systemd-analyze',
    label: 'systemd-analyze',
    purpose: 'the checks of the shipped systemd units (test/deploy/systemd.test.ts)',
    packages: ['systemd'],
    neededBy: /^test\/deploy\/systemd\.test\.ts$/,
    envVar: 'VRP_TEST_SYSTEMD_ANALYZE',
    find: () => {
      const set = process.env['VRP_TEST_SYSTEMD_ANALYZE'];
      if (set) return existsSync(set) ? set : undefined;
      return onPath('systemd-analyze') ?? existingPath('/usr/bin/systemd-analyze');
    },
  },
  {
    name: 'openssl',
    label: 'openssl',
    purpose:
      'the notification tests, whose SMTP receiver speaks STARTTLS with a throwaway certificate (test/jobs/notifications.test.ts)',
    packages: ['openssl'],
    neededBy: /^test\/jobs\/notifications\.test\.ts$/,
    envVar: 'VRP_TEST_OPENSSL',
    find: () => {
      const set = process.env['VRP_TEST_OPENSSL'];
      if (set) return existsSync(set) ? set : undefined;
      return onPath('openssl') ?? existingPath('/usr/bin/openssl');
    },
  },
  {
    name: 'buildah',
    label: 'buildah (with debootstrap for the base image)',
    purpose: 'the container image, built and run through the walk-through (test/deploy/image.test.ts)',
    packages: ['buildah', 'debootstrap'],
    neededBy: /^test\/deploy\/image\.test\.ts$/,
    envVar: 'VRP_TEST_BUILDAH',
    find: () => {
      const set = process.env['VRP_TEST_BUILDAH'];
      if (set) return existsSync(set) ? set : undefined;
      if (!onPath('debootstrap') && !existsSync('/usr/sbin/debootstrap')) return undefined;
      return onPath('buildah') ?? existingPath('/usr/bin/buildah');
    },
  },
  {
    name: 'nginx',
    label: 'nginx (with openssl for its throwaway certificate)',
    purpose: 'the walk-through through a TLS-terminating nginx (test/e2e/tls-proxy.test.ts)',
    packages: ['nginx', 'openssl'],
    neededBy: /^test\/e2e\/tls-proxy\.test\.ts$/,
    envVar: 'VRP_TEST_NGINX',
    find: () => {
      const set = process.env['VRP_TEST_NGINX'];
      if (set) return existsSync(set) ? set : undefined;
      if (!onPath('openssl')) return undefined;
      return existingPath('/usr/sbin/nginx') ?? onPath('nginx');
    },
  },
  {
    name: 'strace',
    label: 'strace',
    purpose:
      'the check of durable commits on SQLite, from the system calls of a server (test/e2e/durable-commit.test.ts)',
    packages: ['strace'],
    neededBy: /^test\/e2e\/durable-commit\.test\.ts$/,
    envVar: 'VRP_TEST_STRACE',
    find: () => {
      const set = process.env['VRP_TEST_STRACE'];
      if (set) return existsSync(set) ? set : undefined;
      return onPath('strace') ?? existingPath('/usr/bin/strace');
    },
  },
];

function existingPath(path: string): string | undefined {
  return existsSync(path) ? path : undefined;
}

/** Whether this process may install Debian packages: root, with apt-get. */
export function canInstall(): boolean {
  return process.getuid?.() === 0 && onPath('apt-get') !== undefined;
}

export function installCommand(tool: Tool): string {
  return `${process.getuid?.() === 0 ? '' : 'sudo '}apt-get install ${tool.packages.join(' ')}`;
}

/** Installs the packages of `tools` with apt-get, saying what and why; whether it succeeded. */
export function install(tools: readonly Tool[], say: (line: string) => void): boolean {
  if (tools.length === 0) return true;
  const packages = [...new Set(tools.flatMap((t) => t.packages))];
  say(
    `installing ${packages.join(', ')} with apt-get, for ${tools.map((t) => t.purpose).join('; ')} ` +
      '(VRP_TEST_INSTALL=0: skip those tests instead)',
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args: string[]) => {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0)
      say(`apt-get ${args.join(' ')} failed (${r.status}): ${(r.stderr || r.stdout).trim()}`);
    return r.status === 0;
  };
  return run(['update', '-qq']) && run(['install', '-y', '-qq', '--no-install-recommends', ...packages]);
}

export interface Prepared {
  /** Where each found tool is, as the environment the tests get. */
  readonly env: Record<string, string>;
  readonly missing: readonly Tool[];
}

/**
 * Finds the tools, installs the missing ones when `installWanted` and this process can, and
 * says in one line each what is still missing, which tests that costs, and how to install it.
 */
export function prepareTools(
  options: { installWanted: boolean; say: (line: string) => void },
  tools: readonly Tool[] = TOOLS,
): Prepared {
  let missing = tools.filter((t) => t.find() === undefined);
  if (missing.length > 0 && options.installWanted && canInstall()) {
    install(missing, options.say);
    missing = missing.filter((t) => t.find() === undefined);
  }
  const env: Record<string, string> = {};
  for (const tool of tools) {
    const at = tool.find();
    if (at) env[tool.envVar] = at;
  }
  for (const tool of missing) {
    options.say(`${tool.label} is missing, so ${tool.purpose} are skipped; install: ${installCommand(tool)}`);
  }
  return { env, missing };
}

if (import.meta.main) {
  const prepared = prepareTools({
    installWanted: process.argv.includes('--install'),
    say: (line) => console.log(`test tools: ${line}`),
  });
  for (const [name, at] of Object.entries(prepared.env)) console.log(`test tools: ${name}=${at}`);
  process.exit(prepared.missing.length > 0 ? 1 : 0);
}
