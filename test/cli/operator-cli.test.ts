import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, type TestContext, test } from 'node:test';
import { createClientAuthenticator } from '../../src/auth/client-authenticator.ts';
import { findClientCredential } from '../../src/auth/client-lookup.ts';
import { createOperatorLogin } from '../../src/auth/operators.ts';
import { verifySecret } from '../../src/auth/secret-hash.ts';
import { createStore, type Store } from '../../src/store/database.ts';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
import { ownDataDir, vrpInProcess } from '../helpers/cli.ts';
import { createPgDatabase, type StoreKind, testStores } from '../helpers/stores.ts';

/** `vrp` in this process on a store of the test's own (SQLite in its data dir, or a new PostgreSQL database). */
async function cliFor(t: TestContext, store: StoreKind) {
  const dataDir = ownDataDir(t, 'vrp-cli-ops-');
  const pg = store === 'postgres' ? await createPgDatabase() : undefined;
  const env = { VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent', ...(pg ? { VRP_DATABASE_URL: pg.url } : {}) };
  const opened: Store[] = [];
  t.after(async () => {
    for (const s of opened) await s.close();
    await pg?.drop();
  });
  return {
    dataDir,
    vrp: (args: string[]) => vrpInProcess(args, env),
    /** The store the commands wrote to, for checks the CLI itself does not show. */
    open() {
      const s = createStore({ databaseUrl: pg?.url, dataDir, poolSize: 1 });
      opened.push(s);
      return s;
    },
  };
}

/** scrypt at the password cost (N=2^17, r=8, p=1), as a stored hash begins. */
const PASSWORD_COST = 'scrypt$131072$8$1';

/** `bin/vrp.js ARGS` as a real process with `input` on its stdin (only a process has one). */
function vrpProcess(dataDir: string, args: string[], input: string) {
  const r = spawnSync(process.execPath, ['bin/vrp.js', ...args], {
    env: { ...process.env, VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent' },
    encoding: 'utf8',
    input,
  });
  return { code: r.status, out: r.stdout, err: r.stderr, json: () => JSON.parse(r.stdout) };
}

for (const store of testStores()) {
  describe(`vrp operator (${store})`, () => {
    test('create prints the documented JSON once; the credentials get a token of scope operator', async (t) => {
      const { vrp, open } = await cliFor(t, store);
      const created = await vrp(['operator', 'create', 'alice', '--json']);
      assert.equal(created.code, 0, created.err);
      const v = created.json();
      assert.deepEqual(Object.keys(v).sort(), ['client_id', 'client_secret', 'operator', 'role']);
      assert.equal(v.role, 'admin', 'admin unless --role says otherwise');
      assert.equal(v.operator, 'alice');
      assert.match(v.client_id, /^vrpop_[0-9a-f]{24}$/);
      assert.match(v.client_secret, /^[A-Za-z0-9_-]{43}$/);
      const client = await createClientAuthenticator((id) =>
        findClientCredential(open().db, id),
      ).authenticate(v.client_id, v.client_secret);
      assert.equal(client?.kind, 'operator');
      assert.deepEqual(client?.scopes, ['operator']);

      const human = await vrp(['operator', 'create', 'bob']);
      assert.equal(human.code, 0, human.err);
      assert.match(human.out, /^operator: +bob\nclient_id: +vrpop_[0-9a-f]{24}\nclient_secret: +\S{43}\n/);

      const list = await vrp(['operator', 'list', '--json']);
      assert.equal(list.code, 0, list.err);
      assert.deepEqual(
        list.json().map((o: Record<string, unknown>) => [o['name'], o['enabled'], o['console_password']]),
        [
          ['alice', true, false],
          ['bob', true, false],
        ],
      );
      assert.equal(list.json()[0].client_id, v.client_id);
      for (const out of [list.out, (await vrp(['operator', 'list'])).out]) {
        assert.ok(!out.includes(v.client_secret), 'no secret in a list');
        assert.ok(!out.includes('scrypt'), 'no hash in a list');
      }
      assert.match(
        (await vrp(['operator', 'list'])).out,
        /^alice\tvrpop_[0-9a-f]{24}\tenabled\tno console password\tadmin\n/,
      );
    });

    test('disable, enable and rotate-secret; refusals with their exit codes', async (t) => {
      const { vrp, open } = await cliFor(t, store);
      const v = (await vrp(['operator', 'create', 'carol', '--json'])).json();
      const auth = createClientAuthenticator((id) => findClientCredential(open().db, id));

      assert.deepEqual((await vrp(['operator', 'disable', 'carol', '--json'])).json(), {
        operator: 'carol',
        enabled: false,
      });
      assert.equal((await auth.authenticate(v.client_id, v.client_secret))?.enabled, false);
      assert.equal((await vrp(['operator', 'list', '--json'])).json()[0].enabled, false);
      assert.equal((await vrp(['operator', 'enable', 'carol'])).code, 0);
      assert.equal((await auth.authenticate(v.client_id, v.client_secret))?.enabled, true);

      const rotated = await vrp(['operator', 'rotate-secret', 'carol', '--json']);
      assert.equal(rotated.code, 0, rotated.err);
      const r = rotated.json();
      assert.deepEqual(Object.keys(r).sort(), ['client_id', 'client_secret', 'operator', 'role']);
      assert.equal(r.client_id, v.client_id);
      assert.notEqual(r.client_secret, v.client_secret);
      assert.equal(
        await auth.authenticate(v.client_id, v.client_secret),
        undefined,
        'the old secret is refused',
      );
      assert.equal((await auth.authenticate(r.client_id, r.client_secret))?.kind, 'operator');

      const failures: [string[], number, RegExp][] = [
        [['operator', 'create', 'carol'], 1, /an operator named "carol" exists already/],
        [['operator', 'create', 'bad/name'], 1, /an operator name is 1-100 letters/],
        [['operator', 'create'], 2, /a NAME is required/],
        [['operator', 'disable', 'nobody'], 1, /no operator named "nobody"/],
        [['operator', 'enable', 'nobody'], 1, /no operator named "nobody"/],
        [['operator', 'rotate-secret', 'nobody'], 1, /no operator named "nobody"/],
        [['operator', 'disable', '--force', 'carol'], 2, /unknown option --force/],
        [['operator', 'disable', 'carol', 'extra'], 2, /unexpected arguments: extra/],
        [['operator', 'set-password', 'carol'], 2, /--password-stdin is required/],
        [['operator', 'create', 'dave', '--password'], 2, /Unknown option '--password'/],
        [['operator', 'promote', 'carol'], 2, /unknown command: operator promote/],
        [['operator'], 2, /unknown command: operator/],
      ];
      for (const [args, code, message] of failures) {
        const res = await vrp(args);
        assert.equal(res.code, code, `${args.join(' ')}: ${res.err}`);
        assert.match(res.err, message, args.join(' '));
      }
      const names = (await vrp(['operator', 'list', '--json'])).json().map((o: { name: string }) => o.name);
      assert.deepEqual(names, ['carol'], 'nothing created by a refused command');
      const failed = await vrp(['operator', 'disable', 'nobody', '--json']);
      assert.deepEqual(failed.json(), { error: 'no operator named "nobody"' });
    });

    test('roles: create --role and set-role; a role that does not exist changes nothing', async (t) => {
      const { vrp } = await cliFor(t, store);
      const created = await vrp(['operator', 'create', 'erin', '--role', 'support', '--json']);
      assert.equal(created.code, 0, created.err);
      assert.equal(created.json().role, 'support');
      assert.equal((await vrp(['operator', 'create', 'frank'])).code, 0);
      const roles = async () =>
        (await vrp(['operator', 'list', '--json']))
          .json()
          .map((o: Record<string, unknown>) => [o['name'], o['role']]);
      assert.deepEqual(await roles(), [
        ['erin', 'support'],
        ['frank', 'admin'],
      ]);
      const set = await vrp(['operator', 'set-role', 'frank', 'billing', '--json']);
      assert.equal(set.code, 0, set.err);
      assert.deepEqual(set.json(), { operator: 'frank', role: 'billing' });
      assert.match(
        (await vrp(['operator', 'set-role', 'frank', 'billing'])).out,
        /operator "frank" is now billing/,
      );

      const failures: [string[], number, RegExp][] = [
        [
          ['operator', 'create', 'gina', '--role', 'root'],
          1,
          /no role named "root": the roles are admin, support, billing/,
        ],
        [['operator', 'set-role', 'erin', 'Admin'], 1, /no role named "Admin"/],
        [['operator', 'set-role', 'nobody', 'admin'], 1, /no operator named "nobody"/],
        [['operator', 'set-role', 'erin'], 2, /NAME and ROLE are required/],
        [['operator', 'set-role', 'erin', 'admin', 'more'], 2, /unexpected arguments: more/],
      ];
      for (const [args, code, message] of failures) {
        const res = await vrp(args);
        assert.equal(res.code, code, `${args.join(' ')}: ${res.err}`);
        assert.match(res.err, message, args.join(' '));
      }
      assert.deepEqual(
        await roles(),
        [
          ['erin', 'support'],
          ['frank', 'billing'],
        ],
        'nothing changed or created by a refused command',
      );
    });

    test('every change is in the audit log as actor cli, without secrets', async (t) => {
      const { vrp, open } = await cliFor(t, store);
      assert.equal((await vrp(['reseller', 'create', 'acme'])).code, 0);
      assert.equal((await vrp(['reseller', 'disable', 'acme'])).code, 0);
      assert.equal((await vrp(['reseller', 'enable', 'acme'])).code, 0);
      const app = (await vrp(['client', 'create', '--reseller', 'acme', '--json'])).json();
      const appSecret = (await vrp(['client', 'rotate-secret', app.client_id, '--json'])).json()
        .client_secret;
      for (const sub of ['disable', 'enable', 'revoke-tokens']) {
        assert.equal((await vrp(['client', sub, app.client_id])).code, 0);
      }
      const op = (await vrp(['operator', 'create', 'erin', '--json'])).json();
      const opSecret = (await vrp(['operator', 'rotate-secret', 'erin', '--json'])).json().client_secret;
      assert.equal((await vrp(['operator', 'disable', 'erin'])).code, 0);
      assert.equal((await vrp(['operator', 'enable', 'erin'])).code, 0);
      // Refused commands change nothing and record nothing.
      assert.equal((await vrp(['client', 'disable', 'vrp_000000000000000000000000'])).code, 1);
      assert.equal((await vrp(['operator', 'disable', 'nobody'])).code, 1);
      assert.equal((await vrp(['reseller', 'create', 'acme'])).code, 1);

      const db = open().db;
      const entries = await listAuditEntries(db, { limit: 100, order: 'oldest' });
      assert.deepEqual(
        entries.map((e) => e.action),
        [
          'reseller.create',
          'reseller.disable',
          'reseller.enable',
          'client.create',
          'client.rotate_secret',
          'client.disable',
          'client.enable',
          'client.revoke_tokens',
          'operator.create',
          'operator.rotate_secret',
          'operator.disable',
          'operator.enable',
        ],
      );
      const reseller = await db.selectFrom('resellers').select('id').executeTakeFirstOrThrow();
      const operator = await db.selectFrom('operators').select('id').executeTakeFirstOrThrow();
      for (const e of entries) {
        assert.equal(e.actor.type, 'cli');
        assert.ok(e.actor.id.length > 0);
        assert.equal(e.outcome, 'ok');
        assert.equal(e.requestId, null);
        const [kind] = e.action.split('.');
        const expected = {
          reseller: { type: 'reseller', id: reseller.id },
          client: { type: 'client', id: app.client_id },
          operator: { type: 'operator', id: operator.id },
        }[kind as 'reseller' | 'client' | 'operator'];
        assert.deepEqual(e.target, expected, e.action);
        if (kind !== 'operator') assert.equal(e.resellerId, reseller.id, e.action);
      }
      const text = JSON.stringify(await db.selectFrom('audit_log').selectAll().execute());
      for (const secret of [app.client_secret, appSecret, op.client_secret, opSecret]) {
        assert.ok(!text.includes(secret), 'no secret in the audit log');
      }
      assert.ok(!text.includes('scrypt'), 'no hash in the audit log');
    });
  });
}

describe('vrp operator --password-stdin', () => {
  test('create and set-password read the console password from stdin, never from an argument', async (t) => {
    // Standard input is the process's own: these run bin/vrp.js as a process.
    const dataDir = ownDataDir(t, 'vrp-cli-ops-stdin-');
    const created = vrpProcess(
      dataDir,
      ['operator', 'create', 'frank', '--password-stdin', '--json'],
      'frank has a long passphrase\n',
    );
    assert.equal(created.code, 0, created.err);
    assert.deepEqual(Object.keys(created.json()).sort(), ['client_id', 'client_secret', 'operator', 'role']);

    const weak = vrpProcess(dataDir, ['operator', 'set-password', 'frank', '--password-stdin'], 'short\n');
    assert.equal(weak.code, 1);
    assert.match(weak.err, /a console password is 12 to 1024 characters long, got 5/);
    const empty = vrpProcess(dataDir, ['operator', 'set-password', 'frank', '--password-stdin'], '');
    assert.equal(empty.code, 1);
    assert.match(empty.err, /no password on stdin/);

    const store = createStore({ databaseUrl: undefined, dataDir, poolSize: 1 });
    t.after(() => store.close());
    // The production costs (the other tests of passwords hash at a lower one): what the CLI
    // stores, and what a login checks a name that has no password against.
    const passwordHash = async () =>
      String(
        (
          await store.db
            .selectFrom('operators')
            .select('password_hash')
            .where('name', '=', 'frank')
            .executeTakeFirstOrThrow()
        ).password_hash,
      );
    const firstHash = await passwordHash();
    assert.ok(firstHash.startsWith(`${PASSWORD_COST}$`), firstHash);
    const checked: string[] = [];
    const login = createOperatorLogin(store.db, (secret, stored) => {
      checked.push(stored.split('$').slice(0, 4).join('$'));
      return verifySecret(secret, stored);
    });
    assert.equal(await login.verify('nobody', 'frank has a long passphrase'), undefined);
    assert.deepEqual(checked, [PASSWORD_COST], 'the dummy hash has the password cost');
    assert.equal(
      (await login.verify('frank', 'frank has a long passphrase'))?.name,
      'frank',
      'one line break dropped',
    );

    const set = vrpProcess(
      dataDir,
      ['operator', 'set-password', 'frank', '--password-stdin', '--json'],
      'a new passphrase for frank',
    );
    assert.equal(set.code, 0, set.err);
    assert.deepEqual(set.json(), { operator: 'frank', password_set: true });
    const replaced = await passwordHash();
    assert.ok(replaced.startsWith(`${PASSWORD_COST}$`), replaced);
    assert.notEqual(replaced, firstHash);
    assert.equal(await login.verify('frank', 'frank has a long passphrase'), undefined);
    assert.equal((await login.verify('frank', 'a new passphrase for frank'))?.name, 'frank');
    const list = (
      await vrpInProcess(['operator', 'list', '--json'], { VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent' })
    ).json();
    assert.equal(list[0].console_password, true);
    const actions = (await listAuditEntries(store.db, { limit: 10, order: 'oldest' })).map((e) => e.action);
    assert.deepEqual(actions, ['operator.create', 'operator.set_password']);
  });
});
