import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { freePort } from '../../scripts/postgres.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { waitUntil } from '../helpers/budget.ts';
import { ownDataDir, vrpInProcess } from '../helpers/cli.ts';

/** Every migration, in order: what `vrp migrate` applies to a new store of either kind. */
const MIGRATIONS = [
  '001-initial',
  '002-services-status-index',
  '003-job-step-marker',
  '004-retention-indexes',
  '005-job-from-state',
  '006-events-webhooks',
  '007-quotas-usage',
  '008-operators-audit',
  '009-host-state',
  '010-console-sessions',
  '011-reconciler-leases',
  '012-password-applies',
  '013-job-queue-order',
  '014-events-seq-at-commit',
  '015-job-notifications',
  '016-job-retry',
  '017-service-error',
  '018-host-records',
  '019-backup-chains',
  '020-self-service',
  '021-ip-pools',
  '022-rdns',
  '023-traffic',
  '024-operator-roles',
  '025-two-factor',
  '026-audit-actors',
  '027-notifications',
  '028-catalog-admin',
  '029-service-search',
  '030-billing-id',
  '031-domain-search-pending',
  '032-event-locks-in-order',
  '033-vms-migrating-to',
  '034-libvirt-leftovers',
  '035-console-session-ends',
  '036-libvirt-vm-macs',
  '037-libvirt-vm-reached',
  '038-room-claims',
  '039-sim-disk-pauses',
  '040-sim-start-with-host',
];

/** `vrp` in this process, on a data dir of the test's own (settings in `env` added). */
function cliFor(t: TestContext) {
  const dataDir = ownDataDir(t);
  const vrp = (args: string[], env: Record<string, string> = {}) =>
    vrpInProcess(args, { VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent', ...env });
  return { dataDir, vrp };
}

/** `bin/vrp.js ARGS` as a real process: for what only a process shows (exit status, stdin). */
async function vrpProcess(dataDir: string, args: string[], input?: string) {
  const child = spawn(process.execPath, ['bin/vrp.js', ...args], {
    env: { ...process.env, VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent' },
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return { code, out, err, json: () => JSON.parse(out) };
}

describe('vrp command', () => {
  test('reseller update: sets and clears the external billing id; refuses bad ids, both or neither option, unknown names', async (t) => {
    const { vrp } = cliFor(t);
    assert.equal((await vrp(['reseller', 'create', 'acme'])).code, 0);
    const set = await vrp(['reseller', 'update', 'acme', '--billing-id', 'CUST-0042', '--json']);
    assert.equal(set.code, 0, set.err);
    assert.deepEqual(set.json(), { name: 'acme', external_billing_id: 'CUST-0042' });
    assert.match((await vrp(['reseller', 'list'])).out, /^acme\tenabled\t\S+\tCUST-0042$/m);
    for (const [args, message] of [
      [['reseller', 'update', 'acme'], /give --billing-id ID or --clear-billing-id/],
      [
        ['reseller', 'update', 'acme', '--billing-id', 'X', '--clear-billing-id'],
        /give --billing-id ID or --clear-billing-id/,
      ],
      [['reseller', 'update', 'acme', '--billing-id', 'x'.repeat(101)], /--billing-id/],
      [['reseller', 'update', 'acme', '--billing-id', 'tab\there'], /--billing-id/],
      [['reseller', 'update', '--billing-id', 'X'], /NAME/],
    ] as const) {
      const r = await vrp([...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      assert.match(r.err, message);
    }
    const unknown = await vrp(['reseller', 'update', 'nobody', '--billing-id', 'X']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no reseller named "nobody"/);
    assert.match((await vrp(['reseller', 'list'])).out, /\tCUST-0042$/m, 'nothing changed by the refusals');
    const cleared = await vrp(['reseller', 'update', 'acme', '--clear-billing-id']);
    assert.equal(cleared.code, 0, cleared.err);
    assert.match(cleared.out, /external billing id cleared/);
    assert.match((await vrp(['reseller', 'list'])).out, /^acme\tenabled\t\S+\t-$/m);
  });

  test('reseller create and list', async (t) => {
    const { vrp } = cliFor(t);
    const created = await vrp(['reseller', 'create', 'acme', '--json']);
    assert.equal(created.code, 0, created.err);
    assert.equal(created.json().name, 'acme');
    const dup = await vrp(['reseller', 'create', 'acme']);
    assert.equal(dup.code, 1);
    assert.match(dup.err, /exists already/);
    const list = (await vrp(['reseller', 'list', '--json'])).json();
    assert.deepEqual(
      list.map((r: { name: string }) => r.name),
      ['acme'],
    );
    assert.match((await vrp(['reseller', 'list'])).out, /^acme\tenabled\t/);

    assert.equal((await vrp(['reseller', 'create', 'other'])).code, 0);
    assert.equal((await vrp(['reseller', 'disable', 'other'])).code, 0);
    const states = async () =>
      Object.fromEntries(
        (await vrp(['reseller', 'list', '--json']))
          .json()
          .map((r: { name: string; enabled: boolean }) => [r.name, r.enabled]),
      );
    assert.deepEqual(await states(), { acme: true, other: false });
    assert.equal((await vrp(['reseller', 'enable', 'other'])).code, 0);
    assert.deepEqual(await states(), { acme: true, other: true });
    const missing = await vrp(['reseller', 'disable', 'nobody']);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no reseller named "nobody"/);
    assert.equal((await vrp(['reseller', 'create', '-bad name'])).code, 2, 'an option is not a name');
    assert.equal((await vrp(['reseller', 'create', 'bad/name'])).code, 1);
  });

  test('client create prints the documented JSON once; list never shows secrets', async (t) => {
    const { vrp } = cliFor(t);
    for (const name of ['acme', 'other']) assert.equal((await vrp(['reseller', 'create', name])).code, 0);
    const c = await vrp([
      'client',
      'create',
      '--reseller',
      'acme',
      '--scopes',
      'access,products',
      '--variant',
      'A',
      '--json',
    ]);
    assert.equal(c.code, 0, c.err);
    const v = c.json();
    assert.deepEqual(Object.keys(v).sort(), ['client_id', 'client_secret', 'scopes', 'variant']);
    assert.match(v.client_id, /^vrp_[0-9a-f]{24}$/);
    assert.ok(v.client_secret.length >= 40);
    assert.equal(v.scopes, 'access products');
    assert.equal(v.variant, 'A');
    const list = await vrp(['client', 'list', '--json']);
    assert.ok(!list.out.includes(v.client_secret));
    assert.ok(!list.out.includes('scrypt'));
    assert.equal(list.json()[0].client_id, v.client_id);

    assert.ok(!(await vrp(['client', 'list'])).out.includes(v.client_secret));

    const other = (
      await vrp(['client', 'create', '--reseller', 'other', '--name', 'Billing', '--json'])
    ).json();
    assert.equal(other.scopes, 'access products service', 'all scopes by default');
    assert.equal(other.variant, 'B', 'variant B by default');
    const ofOther = (await vrp(['client', 'list', '--reseller', 'other', '--json'])).json();
    assert.deepEqual(
      ofOther.map((c: { client_id: string; name: string }) => [c.client_id, c.name]),
      [[other.client_id, 'Billing']],
    );
    assert.equal((await vrp(['client', 'list', '--reseller', 'nobody'])).code, 1);

    const rotated = (await vrp(['client', 'rotate-secret', v.client_id, '--json'])).json();
    assert.equal(rotated.client_id, v.client_id);
    assert.notEqual(rotated.client_secret, v.client_secret);
    assert.ok(!(await vrp(['client', 'list', '--json'])).out.includes(rotated.client_secret));
    const enabled = async (id: string) =>
      (await vrp(['client', 'list', '--json'])).json().find((c: { client_id: string }) => c.client_id === id)
        .enabled;
    assert.equal((await vrp(['client', 'disable', v.client_id])).code, 0);
    assert.equal(await enabled(v.client_id), false);
    assert.equal(await enabled(other.client_id), true);
    assert.equal((await vrp(['client', 'enable', v.client_id])).code, 0);
    assert.equal(await enabled(v.client_id), true);
    assert.deepEqual((await vrp(['client', 'revoke-tokens', v.client_id, '--json'])).json(), {
      client_id: v.client_id,
      revoked: true,
    });
    assert.equal((await vrp(['client', 'disable', 'vrp_nope'])).code, 1);
    assert.equal((await vrp(['client', 'rotate-secret', 'vrp_nope'])).code, 1);
    assert.equal((await vrp(['client', 'disable', v.client_id, 'extra'])).code, 2);
  });

  test('client create errors: unknown reseller, bad scopes, bad variant', async (t) => {
    const { vrp } = cliFor(t);
    assert.equal((await vrp(['reseller', 'create', 'acme'])).code, 0);
    assert.equal((await vrp(['client', 'create', '--reseller', 'nope'])).code, 1);
    assert.equal((await vrp(['client', 'create', '--reseller', 'acme', '--scopes', 'admin'])).code, 2);
    assert.equal((await vrp(['client', 'create', '--reseller', 'acme', '--variant', 'C'])).code, 2);
    assert.equal((await vrp(['client', 'create'])).code, 2);
    assert.deepEqual((await vrp(['client', 'list', '--json'])).json(), [], 'none was created');
  });

  test('wrong arguments print usage and exit 2; a bad setting exits 2 naming it', async (t) => {
    const { vrp } = cliFor(t);
    const bad = await vrp(['frobnicate']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /usage: vrp/);
    assert.equal(bad.out, '');
    assert.equal((await vrp([])).code, 2);
    for (const args of [
      ['reseller', 'create'],
      ['reseller', 'list', '--all'],
      ['client', 'frob', 'x'],
      ['client', 'create', '--reseller', 'acme', '--bogus'],
      ['catalog', 'import'],
      ['catalog', 'export', 'extra'],
      ['migrate', 'now'],
      ['serve', '--no-worker', '--worker-only'],
      // Named like a member every object has: no command of ours.
      ['toString'],
      ['constructor'],
    ]) {
      const r = await vrp(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.err, /usage: vrp/, args.join(' '));
    }
    const help = await vrp(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.out, /catalog import FILE.json/);
    const setting = await vrp(['migrate'], { VRP_DRIVER: 'xen' });
    assert.equal(setting.code, 2);
    assert.match(setting.err, /VRP_DRIVER/);
  });

  test("the process exits with the command's code: stdout for answers, stderr for errors", async (t) => {
    // Exit 0 with the answer on stdout: see the stdin test below.
    const { dataDir, vrp } = cliFor(t);
    assert.equal((await vrp(['reseller', 'create', 'acme'])).code, 0);
    const [dup, usage] = await Promise.all([
      vrpProcess(dataDir, ['reseller', 'create', 'acme', '--json']),
      vrpProcess(dataDir, ['frobnicate']),
    ]);
    assert.equal(dup.code, 1);
    assert.deepEqual(dup.json(), { error: 'a reseller named "acme" exists already' });
    assert.match(dup.err, /^vrp: .*exists already\n$/);
    assert.equal(usage.code, 2);
    assert.equal(usage.out, '');
    assert.match(usage.err, /usage: vrp/);
  });

  test('catalog import and export round trip; a bad file changes nothing', async (t) => {
    const { dataDir, vrp } = cliFor(t);
    const file = join(dataDir, 'catalog.json');
    writeFileSync(file, JSON.stringify(DEMO_CATALOG));
    const imported = await vrp(['catalog', 'import', file, '--json']);
    assert.equal(imported.code, 0, imported.err);
    assert.equal(imported.json().products, DEMO_CATALOG.products.length);
    const exported = (await vrp(['catalog', 'export'])).json();
    assert.equal(exported.products.length, DEMO_CATALOG.products.length);
    writeFileSync(join(dataDir, 'again.json'), JSON.stringify(exported));
    assert.equal((await vrp(['catalog', 'import', join(dataDir, 'again.json')])).code, 0);
    assert.deepEqual((await vrp(['catalog', 'export'])).json(), exported);

    const broken = structuredClone(exported);
    broken.products[0].config.cpu.max = 0;
    broken.products[0].name = 'Changed';
    writeFileSync(join(dataDir, 'broken.json'), JSON.stringify(broken));
    const r = await vrp(['catalog', 'import', join(dataDir, 'broken.json')]);
    assert.equal(r.code, 1);
    assert.match(r.err, /products\[0\]\.config\.cpu\.max/);
    assert.deepEqual((await vrp(['catalog', 'export'])).json(), exported, 'nothing changed');
    writeFileSync(join(dataDir, 'notjson.json'), '{');
    assert.equal((await vrp(['catalog', 'import', join(dataDir, 'notjson.json')])).code, 1);
    assert.equal((await vrp(['catalog', 'import', join(dataDir, 'absent.json')])).code, 1);

    // --json lists the problems for scripts.
    const typo = structuredClone(exported);
    typo.products[1].plan = typo.products[1].plans;
    delete typo.products[1].plans;
    writeFileSync(join(dataDir, 'typo.json'), JSON.stringify(typo));
    const j = await vrp(['catalog', 'import', join(dataDir, 'typo.json'), '--json']);
    assert.equal(j.code, 1);
    assert.deepEqual(j.json().problems, ['products[1].plan is not a known field']);
    assert.deepEqual((await vrp(['catalog', 'export'])).json(), exported, 'nothing changed');
  });

  test('catalog import - reads the catalogue from stdin', async (t) => {
    // Standard input is the process's own: this one runs bin/vrp.js as a process.
    const { dataDir, vrp } = cliFor(t);
    const file = join(dataDir, 'catalog.json');
    writeFileSync(file, JSON.stringify(DEMO_CATALOG));
    assert.equal((await vrp(['catalog', 'import', file])).code, 0);
    const exported = (await vrp(['catalog', 'export'])).json();
    // --json lists the problems for scripts; stdin (-) is a file too.
    const typo = structuredClone(exported);
    typo.products[1].plan = typo.products[1].plans;
    delete typo.products[1].plans;
    const j = await vrpProcess(dataDir, ['catalog', 'import', '-', '--json'], JSON.stringify(typo));
    assert.equal(j.code, 1);
    assert.deepEqual(j.json().problems, ['products[1].plan is not a known field']);
    assert.deepEqual((await vrp(['catalog', 'export'])).json(), exported, 'nothing changed');
    const renamed = structuredClone(exported);
    renamed.products[1].name = 'VPS Business Plus';
    const viaStdin = await vrpProcess(dataDir, ['catalog', 'import', '-'], JSON.stringify(renamed));
    assert.equal(viaStdin.code, 0, viaStdin.err);
    assert.match(viaStdin.out, /imported 3 products, 8 plans, 4 OS templates/);
    assert.equal((await vrp(['catalog', 'export'])).json().products[1].name, 'VPS Business Plus');
  });

  test('migrate applies the migrations of a new store once', async (t) => {
    const { vrp } = cliFor(t);
    const first = await vrp(['migrate', '--json']);
    assert.equal(first.code, 0, first.err);
    assert.deepEqual(first.json(), { applied: MIGRATIONS });
    assert.match((await vrp(['migrate'])).out, /the schema is up to date/);
    assert.deepEqual((await vrp(['migrate', '--json'])).json(), { applied: [] });
  });

  test('serve --no-worker answers HTTP; serve --worker-only does not listen, nor load the HTTP app; both stop on SIGTERM', async (t) => {
    // The server runs until a signal ends its process: these are processes of their own, each
    // with its own data dir (each loads the demo catalogue), started at once. Each records the
    // modules it loads (test/helpers/load-trace.ts).
    const hook = pathToFileURL(resolve(import.meta.dirname, '../helpers/load-trace.ts')).href;
    const start = async (flag: string) => {
      const serveDir = ownDataDir(t, 'vrp-cli-serve-');
      const port = await freePort();
      const child = spawn(process.execPath, ['bin/vrp.js', 'serve', flag], {
        env: {
          ...process.env,
          VRP_DATA_DIR: serveDir,
          VRP_LOG_LEVEL: 'info',
          VRP_HOST: '127.0.0.1',
          VRP_PORT: String(port),
          VRP_SIMULATED_SPEED: '0',
          NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${hook}`,
          VRP_TEST_LOAD_TRACE: join(serveDir, 'loads.txt'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const httpModules = () =>
        readFileSync(join(serveDir, 'loads.txt'), 'utf8')
          .split('\n')
          .filter((url) => /[/](src|dist)[/]http[/]/.test(url));
      return { port, child, exited, output: () => out, httpModules };
    };
    const waitFor = (what: () => Promise<boolean>, label: string, output: () => string) =>
      waitUntil(label, () => what().catch(() => false), { everyMs: 50 }).catch((err: Error) => {
        throw new Error(`${err.message}:\n${output()}`);
      });
    const [api, worker] = await Promise.all([start('--no-worker'), start('--worker-only')]);
    try {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok,
        'healthz',
        api.output,
      );
      assert.match(api.output(), /demo catalogue was loaded/);
      await waitFor(async () => worker.output().includes('not listening'), 'worker start', worker.output);
      await assert.rejects(fetch(`http://127.0.0.1:${worker.port}/healthz`));
      // The trace sees the API process load the app; the worker-only process loads none of it.
      assert.ok(api.httpModules().some((url) => /[/]http[/]app\.(ts|js)$/.test(url)));
      assert.deepEqual(worker.httpModules(), []);
    } finally {
      api.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
    }
    assert.equal(await api.exited, 0);
    assert.equal(await worker.exited, 0);
    // What each logged up to its exit is in its output, whole: the shutdown's own line too.
    for (const p of [api, worker]) {
      const logged = p
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; signal?: string });
      assert.ok(
        logged.some((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM'),
        p.output(),
      );
    }
  });
});

describe('vrp command against PostgreSQL', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, () => {
  test('migrate, reseller, client and catalog commands work on PostgreSQL', async (t) => {
    const { createPgDatabase } = await import('../helpers/stores.ts');
    const { dataDir, vrp } = cliFor(t);
    const db = await createPgDatabase();
    try {
      const env = { VRP_DATABASE_URL: db.url };
      assert.deepEqual((await vrp(['migrate', '--json'], env)).json().applied, MIGRATIONS);
      assert.equal((await vrp(['reseller', 'create', 'pgco'], env)).code, 0);
      const c = (await vrp(['client', 'create', '--reseller', 'pgco', '--json'], env)).json();
      assert.match(c.client_id, /^vrp_/);
      assert.equal((await vrp(['client', 'list', '--json'], env)).json()[0].client_id, c.client_id);
      const file = join(dataDir, 'pg-catalog.json');
      writeFileSync(file, JSON.stringify(DEMO_CATALOG));
      assert.equal((await vrp(['catalog', 'import', file], env)).code, 0);
      assert.equal(
        (await vrp(['catalog', 'export'], env)).json().products.length,
        DEMO_CATALOG.products.length,
      );
    } finally {
      await db.drop();
    }
  });
});
