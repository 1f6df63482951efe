/**
 * A rolling upgrade on PostgreSQL: two processes of the previous version serve a store; they are
 * replaced one at a time by processes of this version (the first of which migrates the store
 * while the other old one keeps serving), and a process of the previous version started on the
 * while the other old one keeps serving). Orders, creates and status reads go round the live
 * processes all along, as behind a load balancer that takes a process out before it is stopped:
 * none fails, and every service ordered ends running. Then a process of this version starts on a
 * store that a next version has migrated further, as an old process restarting in the middle of
 * the next upgrade would, and serves.
 *
 * "The previous version" is this repository's tree just before the commit that added the newest
 * migration (git history), run from a copy of its own with this checkout's node_modules.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { API } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';
import { createPgDatabase } from '../helpers/stores.ts';

const root = resolve(import.meta.dirname, '..', '..');

/** The commit before the one that added the newest migration, or why there is none to run. */
function previousVersion(): { commit: string; newest: string } | string {
  const newest = readdirSync(join(root, 'src/store/migrations'))
    .filter((f) => /^\d{3}-.+\.ts$/.test(f))
    .sort()
    .at(-1);
  if (!newest) return 'no migrations';
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    const added = git('log', '-1', '--format=%H', '--diff-filter=A', '--', `src/store/migrations/${newest}`);
    if (!added) return `the git history does not hold the commit that added ${newest}`;
    return { commit: git('rev-parse', `${added}^`), newest: newest.replace(/\.ts$/, '') };
  } catch (err) {
    return `needs this checkout's git history: ${err instanceof Error ? err.message : String(err)}`;
  }
}

const previous = previousVersion();
const skip = !process.env['VRP_TEST_PG_URL']
  ? 'needs npm test (PostgreSQL)'
  : typeof previous === 'string'
    ? previous
    : false;

test('a rolling upgrade: old and new processes serve side by side, no request fails', { skip }, async () => {
  if (typeof previous === 'string') return;
  const pgDb = await createPgDatabase();
  const work = mkdtempSync(join(tmpdir(), 'vrp-upgrade-'));
  const oldTree = join(work, 'old');
  execFileSync(
    'bash',
    ['-c', `mkdir -p "$1" && git archive "$2" | tar -x -C "$1"`, '_', oldTree, previous.commit],
    {
      cwd: root,
    },
  );
  symlinkSync(join(root, 'node_modules'), join(oldTree, 'node_modules'));
  const servers: ServerProcess[] = [];
  const db = new pg.Client({ connectionString: pgDb.url });
  db.on('error', () => {}); // the database dropped at the end ends this connection
  await db.connect();
  after(async () => {
    for (const s of servers) await s.kill();
    await db.end();
    await pgDb.drop();
    rmSync(work, { recursive: true, force: true });
  });

  const env = {
    VRP_DATABASE_URL: pgDb.url,
    VRP_DATA_DIR: join(work, 'data'),
    VRP_SECRET_KEY: randomBytes(32).toString('hex'),
    VRP_SIMULATED_SPEED: '0.02',
    VRP_LOG_LEVEL: 'warn',
  };
  const start = async (tree: string) => {
    const s = await startServer(env, undefined, tree);
    servers.push(s);
    return s;
  };
  const vrp = (tree: string, ...args: string[]) =>
    execFileSync(process.execPath, ['bin/vrp.js', ...args, '--json'], {
      cwd: tree,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });

  // The installation before the upgrade: the previous version made the store and serves it.
  const a = await start(oldTree);
  const b = await start(oldTree);
  vrp(oldTree, 'reseller', 'create', 'acme');
  const app = JSON.parse(vrp(oldTree, 'client', 'create', '--reseller', 'acme'));

  // The load balancer: requests go round the live processes; a process is taken out before it
  // is stopped, as a balancer drains a backend.
  let live: ServerProcess[] = [a, b];
  let turn = 0;
  const failures: string[] = [];
  const servedBy = new Map<ServerProcess, number>();
  const send = async (method: 'GET' | 'POST', path: string, token: string, body?: unknown) => {
    const server = live[turn++ % live.length]!;
    try {
      const res = await fetch(`${server.url}${API}/${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
      });
      const text = await res.text();
      servedBy.set(server, (servedBy.get(server) ?? 0) + 1);
      if (res.status >= 300) failures.push(`${method} ${path} on ${server.port}: ${res.status} ${text}`);
      return JSON.parse(text);
    } catch (err) {
      failures.push(
        `${method} ${path} on ${server.port}: ${err instanceof Error ? err.message : String(err)}`,
      );
      return undefined;
    }
  };
  const token = async () => {
    const server = live[turn++ % live.length]!;
    const res = await fetch(`${server.url}/vps_reseller_provider/public/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    return String(JSON.parse(text).access_token);
  };
  const bearer = await token();
  const ids: string[] = [];
  let loading = true;
  // Orders and creates up to 60 services, then status reads of them, until the upgrade is over.
  const load = (async () => {
    for (let i = 0; loading && failures.length < 10; i++) {
      if (ids.length >= 60) {
        await send('GET', `service/${ids[i % ids.length]}/status`, bearer);
        continue;
      }
      const order = await send('POST', 'service/create-order', bearer, smallOrder(`up${i}.example.com`));
      const id = order?.data?.[0]?.service_id ?? order?.[0]?.service_id;
      if (typeof id !== 'string') continue;
      ids.push(id);
      await send('POST', `service/${id}/create`, bearer);
      await send('GET', `service/${id}/status`, bearer);
    }
  })();
  const served = (s: ServerProcess) => servedBy.get(s) ?? 0;
  const afterMore = async (s: ServerProcess, what: string) => {
    const from = served(s);
    await waitUntil(what, () => served(s) >= from + 5, { everyMs: 20 });
  };

  await afterMore(b, 'the old processes to serve');
  // Replace b: out of the balancer, stopped gracefully, a new one started (it migrates the
  // store while the old a serves), back in.
  live = [a];
  assert.equal(await b.stop(), 0, b.output());
  const b2 = await start(root);
  live = [a, b2];
  await afterMore(a, 'the old process to serve on the migrated store');
  await afterMore(b2, 'the new process to serve');
  // Replace a.
  live = [b2];
  assert.equal(await a.stop(), 0, a.output());
  const a2 = await start(root);
  live = [a2, b2];
  await afterMore(a2, 'the second new process to serve');
  loading = false;
  await load;

  // A failed request's log lines (its request id, on whichever process logged it) say why.
  const logged = failures
    .flatMap((f) => [...f.matchAll(/request ([0-9a-f-]{36})/g)].map((m) => m[1]!))
    .flatMap((id) =>
      servers.flatMap((s) =>
        s
          .output()
          .split('\n')
          .filter((l) => l.includes(id)),
      ),
    );
  assert.deepEqual(failures, [], `no request failed during the upgrade\n${logged.join('\n')}`);
  assert.ok(ids.length >= 10, `${ids.length} services ordered`);
  let left = -1;
  await waitUntil(
    'every service ordered to run',
    async () => {
      const { rows } = await db.query(
        `select count(*)::int as n from services where status <> 'running' or pending_jobs <> 0`,
      );
      left = rows[0].n;
      return left === 0;
    },
    { everyMs: 200 },
  ).catch(async (err: Error) => {
    const { rows } = await db.query(
      `select s.id, s.status, s.pending_jobs, j.action, j.status as job, j.attempts, j.error from services s
       left join jobs j on j.service_id = s.id where s.status <> 'running' or s.pending_jobs <> 0`,
    );
    assert.fail(`${err.message}: ${left} not running: ${JSON.stringify(rows)}`);
  });
  const last = await token();

  // The next upgrade, as far as this version can see it: a store a newer version has migrated
  // further. A process of this version starting on it (a restart in the middle of that upgrade)
  // serves, and says why its store is ahead.
  await db.query(`insert into schema_migrations (name, timestamp) values ('999-next-version', 'then')`);
  const d = await start(root);
  live = [d];
  const status = await send('GET', `service/${ids[0]}/status`, last);
  assert.equal(status?.data?.status ?? status?.status, 'running');
  assert.deepEqual(failures, []);
  assert.match(d.output(), /migrations of a newer version/);
  assert.match(d.output(), /999-next-version/);
});
