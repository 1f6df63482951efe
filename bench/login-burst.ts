/**
 * The server's peak memory under a burst of wrong console passwords: each check is a scrypt
 * hash at 128 MiB, so how many run at once decides the peak. Starts the real server (`node
 * dist/main.js`, as the launchers run it) on a fresh SQLite store with one operator, sends the
 * burst from one loopback address and then from many (127.0.0.10 and up), and reads the
 * process's VmHWM (peak resident memory) from /proc before and after each. Loopback only.
 *
 *   node bench/login-burst.ts [--at DIR] [--count N]
 *
 * `--at DIR` runs another checkout's server (to compare with an earlier commit).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../scripts/postgres.ts';
import { SERVER_ENV, SERVER_NODE_FLAGS, serverProgram } from '../test/helpers/server-process.ts';

const { values } = parseArgs({
  options: { at: { type: 'string', default: '.' }, count: { type: 'string', default: '20' } },
});
const root = resolve(values.at);
const count = Number(values.count);
const PASSWORD = 'a long console password for the bench';
const CONSOLE = '/vps_reseller_provider/console';

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-login-burst-'));
const env = { ...process.env, VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'warn', VRP_RATE_LIMIT: '0' };
const made = spawnSync(process.execPath, ['bin/vrp.js', 'operator', 'create', 'dave', '--password-stdin'], {
  cwd: root,
  env,
  input: PASSWORD,
  encoding: 'utf8',
});
if (made.status !== 0) throw new Error(`operator create failed: ${made.stderr}`);

const port = await freePort();
const server = spawn(process.execPath, [...SERVER_NODE_FLAGS, serverProgram()], {
  cwd: root,
  env: { ...env, ...SERVER_ENV, VRP_PORT: String(port), VRP_HOST: '127.0.0.1' },
  stdio: 'inherit',
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

function send(
  method: string,
  path: string,
  from: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, localAddress: from, headers, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers }));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

function vmHwmMb(): number {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** One wrong login from each of `addresses` at once; the answers' statuses, counted. */
async function burst(addresses: string[]): Promise<Record<number, number>> {
  const logins = await Promise.all(
    addresses.map(async (from, i) => {
      const page = await send('GET', `${CONSOLE}/login`, from);
      const cookies = ([] as string[]).concat(page.headers['set-cookie'] ?? []);
      const token = /vrp_console_login=([^;]+)/.exec(cookies.join('\n'))?.[1] ?? '';
      const form = new URLSearchParams({ _csrf: token, name: 'dave', password: `wrong password ${i}` });
      return { from, token, body: form.toString() };
    }),
  );
  const answers = await Promise.all(
    logins.map((l) =>
      send(
        'POST',
        `${CONSOLE}/login`,
        l.from,
        { 'content-type': 'application/x-www-form-urlencoded', cookie: `vrp_console_login=${l.token}` },
        l.body,
      ),
    ),
  );
  const counted: Record<number, number> = {};
  for (const a of answers) counted[a.status] = (counted[a.status] ?? 0) + 1;
  return counted;
}

try {
  for (let tries = 0; ; tries++) {
    try {
      if ((await send('GET', '/healthz', '127.0.0.1')).status === 200) break;
    } catch {
      if (tries > 600) throw new Error('the server did not start');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const idle = vmHwmMb();
  const one = await burst(Array.from({ length: count }, () => '127.0.0.1'));
  const afterOne = vmHwmMb();
  const many = await burst(Array.from({ length: count }, (_, i) => `127.0.0.${10 + i}`));
  const afterMany = vmHwmMb();
  const commit = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  console.log(`commit ${commit.stdout.trim()}: ${count} wrong console passwords at once`);
  console.log(`  peak RSS when started:            ${idle} MB`);
  console.log(`  from one address:   ${JSON.stringify(one)}, peak RSS ${afterOne} MB`);
  console.log(`  from ${count} addresses: ${JSON.stringify(many)}, peak RSS ${afterMany} MB`);
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
}
