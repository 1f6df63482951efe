/**
 * A start-up that fails for a reason the operator fixes from the message alone prints one line
 * naming the problem and exits non-zero, without a stack trace: the kinds that only a real
 * start-up meets (a port in use, an address not on this machine, a data directory, key file or
 * SQLite file that cannot be used), through both entry points (`node src/main.ts` and
 * `bin/vrp.js serve`). Settings refused by loadConfig are test/config.test.ts's; a store out
 * of reach is test/store/open-failure.test.ts's.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadMasterKey } from '../../src/auth/keys.ts';
import { ConfigError } from '../../src/config.ts';
import { ensureDataDir } from '../../src/data-dir.ts';
import { ExpectedFailure, reportFailure } from '../../src/expected-failure.ts';
import { StoreOpenError } from '../../src/store/open-failure.ts';
import { runToExit } from '../helpers/run-to-exit.ts';

const root = mkdtempSync(join(tmpdir(), 'vrp-startup-failures-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A fresh directory under the test's own. */
const dir = (name: string) => mkdtempSync(join(root, `${name}-`));

describe('start-up failures the operator fixes: one line, no stack, a non-zero exit', () => {
  test('port in use, address not here, data dir, key file and SQLite file that cannot be used', async () => {
    // A port held by this test, so that the server's listen finds it in use.
    const holder = createServer().listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const port = (holder.address() as { port: number }).port;
    const aFile = join(root, 'a-file');
    writeFileSync(aFile, 'not a directory\n');
    const badSqlite = dir('bad-sqlite');
    writeFileSync(join(badSqlite, 'vrp.sqlite'), 'not a database\n');
    const badKey = dir('bad-key');
    writeFileSync(join(badKey, 'secret.key'), 'not a key\n');
    const cases: { name: string; args: string[]; env: Record<string, string>; code: number; line: RegExp }[] =
      [
        {
          name: 'a port in use',
          args: ['src/main.ts'],
          env: { VRP_DATA_DIR: dir('port'), VRP_PORT: String(port) },
          code: 1,
          line: new RegExp(
            `^vrp: cannot listen on 127\\.0\\.0\\.1:${port} \\(VRP_HOST, VRP_PORT\\): address already in use$`,
          ),
        },
        {
          name: 'an address not on this machine',
          args: ['bin/vrp.js', 'serve'],
          // TEST-NET-1 (RFC 5737): no machine has it; the listen fails, nothing is sent.
          env: { VRP_DATA_DIR: dir('host'), VRP_HOST: '192.0.2.1' },
          code: 1,
          line: /^vrp: cannot listen on 192\.0\.2\.1:0 \(VRP_HOST, VRP_PORT\): address not available on this machine$/,
        },
        {
          name: 'a data directory that is a file',
          args: ['src/main.ts'],
          env: { VRP_DATA_DIR: aFile },
          code: 2,
          line: new RegExp(`^vrp: VRP_DATA_DIR \\(${aFile}\\) cannot be used: not a directory$`),
        },
        {
          name: 'a data directory where none can be made (and where a recursive mkdir never returned)',
          args: ['bin/vrp.js', 'serve', '--worker-only'],
          env: { VRP_DATA_DIR: '/proc/vrp-startup-test/data' },
          code: 2,
          line: /^vrp: VRP_DATA_DIR \(\/proc\/vrp-startup-test\/data\) cannot be used: /,
        },
        {
          name: 'an SQLite file that is not a database',
          args: ['src/main.ts'],
          env: { VRP_DATA_DIR: badSqlite },
          code: 1,
          line: /^vrp: cannot open the store \(SQLite .*vrp\.sqlite\): file is not a database$/,
        },
        {
          name: 'a key file that holds no key',
          args: ['bin/vrp.js', 'serve'],
          env: { VRP_DATA_DIR: badKey },
          code: 2,
          line: /^vrp: the key file .*secret\.key does not hold a 32-byte key as 64 hex digits: .*VRP_SECRET_KEY/,
        },
      ];
    try {
      // At once: each process spends most of its time loading our code.
      const exits = await Promise.all(
        cases.map((c) => runToExit(c.args, { VRP_DEMO: '0', VRP_SIM_IP_POOL: '10.80.0.0/28', ...c.env })),
      );
      for (const [i, c] of cases.entries()) {
        const r = exits[i]!;
        assert.equal(r.code, c.code, `${c.name}: exit ${r.code}\n${r.stderr}`);
        const lines = r.stderr.trimEnd().split('\n');
        assert.equal(lines.length, 1, `${c.name} prints one line:\n${r.stderr}`);
        assert.match(lines[0]!, c.line, c.name);
      }
    } finally {
      holder.close();
    }
  });
});

describe('the pieces of that path, in process', () => {
  test('the data directory: made with its parents, or a ConfigError naming VRP_DATA_DIR and why', () => {
    const nested = join(dir('nested'), 'a', 'b', 'c');
    ensureDataDir(nested);
    ensureDataDir(nested);
    const aFile = join(dir('file'), 'f');
    writeFileSync(aFile, '');
    for (const [path, cause] of [
      [aFile, 'not a directory'],
      [join(aFile, 'under'), 'not a directory'],
    ] as const) {
      assert.throws(
        () => ensureDataDir(path),
        (err: unknown) =>
          err instanceof ConfigError && err.message === `VRP_DATA_DIR (${path}) cannot be used: ${cause}`,
      );
    }
  });

  test('the key file: unreadable, not a key or not to be made is a ConfigError naming the file and VRP_SECRET_KEY', () => {
    const keyDir = dir('key-dir');
    mkdirSync(join(keyDir, 'secret.key'));
    assert.throws(
      () => loadMasterKey(undefined, keyDir),
      (err: unknown) =>
        err instanceof ConfigError &&
        /secret\.key cannot be used: is a directory.*VRP_SECRET_KEY/.test(err.message),
    );
    // A data dir that is there but takes no new file (sysfs): the key cannot be written, and
    // nothing is left half made.
    assert.throws(
      () => loadMasterKey(undefined, '/sys/kernel'),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^the key file \/sys\/kernel\/secret\.key cannot be used: (permission denied|read-only file system) \(or set VRP_SECRET_KEY\)$/.test(
          err.message,
        ),
    );
    assert.deepEqual(
      readdirSync('/sys/kernel').filter((name) => name.startsWith('secret.key')),
      [],
      'no key file, whole or in part',
    );
    const fresh = dir('key-fresh');
    assert.equal(loadMasterKey(undefined, join(fresh, 'new')).length, 32, 'made, with the directory');
  });

  test('reportFailure: one line and its exit code when expected; the whole error with its stack else', () => {
    const report = (err: unknown) => {
      let text = '';
      const code = reportFailure(err, (t) => {
        text += t;
      });
      return { code, text };
    };
    assert.deepEqual(report(new ConfigError('VRP_PORT must be a whole number, got "x"')), {
      code: 2,
      text: 'vrp: VRP_PORT must be a whole number, got "x"\n',
    });
    assert.deepEqual(
      report(new StoreOpenError('cannot open the store (SQLite /x): file is not a database')),
      {
        code: 1,
        text: 'vrp: cannot open the store (SQLite /x): file is not a database\n',
      },
    );
    assert.deepEqual(report(new ExpectedFailure('two\nlines', { exitCode: 3, cause: new Error('inner') })), {
      code: 3,
      text: 'vrp: two lines\n',
    });
    const unexpected = report(new TypeError('a bug'));
    assert.equal(unexpected.code, 1);
    assert.match(unexpected.text, /^vrp: unexpected failure \(please report it\): TypeError: a bug\n\s+at /);
  });
});
