/**
 * Libraries a process holds only when its settings use them (bench/FINDINGS.md, "Memory at
 * rest"): the S3 and SFTP backup stores' (the AWS SDK, ssh2), Nodemailer, the QR code maker of
 * the two-factor enrolment, ssh2's key parser. A server with the default settings (local
 * backups, no SMTP) serves requests without loading any of them; one whose backups go to S3
 * loads the AWS SDK, which shows that the trace sees what is loaded. Both as the source runs and
 * as the launchers run the build: the bundle holds the packages it loads at start and leaves these
 * out (scripts/build.ts, EXTERNAL), and its dynamic imports stay chunks of their own.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { serverProgram, startServer } from '../helpers/server-process.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const LAZY = ['@aws-sdk', 'ssh2', 'ssh2-sftp-client', 'nodemailer', 'qrcode'];
const hook = pathToFileURL(resolve(import.meta.dirname, '../helpers/load-trace.ts')).href;

/**
 * The packages under node_modules that `program` with `env` loaded by the time it served /readyz,
 * and the files of dist/ it loaded.
 */
async function packagesLoaded(
  env: Record<string, string>,
  program?: string,
): Promise<{ packages: Set<string>; built: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-lazy-'));
  dirs.push(dir);
  const trace = join(dir, 'loads.txt');
  const server = await startServer(
    {
      VRP_DATA_DIR: join(dir, 'data'),
      NODE_OPTIONS: `--import ${hook}`,
      VRP_TEST_LOAD_TRACE: trace,
      ...env,
    },
    undefined,
    undefined,
    program,
  );
  try {
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
  const packages = new Set<string>();
  const built: string[] = [];
  for (const url of readFileSync(trace, 'utf8').split('\n')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m?.[1]) packages.add(m[1].startsWith('@aws-sdk/') ? '@aws-sdk' : m[1]);
    const d = /\/dist\/([^/]+\.js)$/.exec(url);
    if (d?.[1] && !url.includes('/node_modules/')) built.push(d[1]);
  }
  return { packages, built };
}

const S3_BACKUPS = {
  VRP_BACKUP_STORE: 's3://backups/vrp',
  VRP_BACKUP_S3_ENDPOINT: 'http://127.0.0.1:9',
  VRP_BACKUP_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
  VRP_BACKUP_S3_SECRET_ACCESS_KEY: 'not-a-real-secret-4242',
};

test('the default settings load none of the libraries kept for the settings that use them', async () => {
  const { packages: loaded } = await packagesLoaded({});
  assert.ok(loaded.has('fastify') && loaded.has('kysely'), [...loaded].join(' '));
  assert.deepEqual(
    LAZY.filter((p) => loaded.has(p)),
    [],
  );
});

test('backups in S3: the AWS SDK is loaded, and still no SSH or mail library', async () => {
  const { packages: loaded } = await packagesLoaded(S3_BACKUPS);
  assert.ok(loaded.has('@aws-sdk'), [...loaded].join(' '));
  assert.deepEqual(
    LAZY.filter((p) => p !== '@aws-sdk' && loaded.has(p)),
    [],
  );
});

test("the build, as the launchers run it: the default settings load none of them, nor the stores' chunks", async () => {
  const { packages: loaded, built } = await packagesLoaded({}, serverProgram());
  assert.ok(built.includes('main.js'), built.join(' '));
  assert.deepEqual(
    LAZY.filter((p) => loaded.has(p)),
    [],
  );
  assert.deepEqual(
    built.filter((f) => /^(s3|sftp)-/.test(f)),
    [],
  );
  // Fastify and Kysely are in the bundle, not loaded from node_modules.
  assert.ok(!loaded.has('fastify') && !loaded.has('kysely'), [...loaded].join(' '));
});

test('the build with backups in S3: its chunk and the AWS SDK are loaded, still no SSH or mail library', async () => {
  const { packages: loaded, built } = await packagesLoaded(S3_BACKUPS, serverProgram());
  assert.ok(loaded.has('@aws-sdk'), [...loaded].join(' '));
  assert.ok(
    built.some((f) => f.startsWith('s3-')),
    built.join(' '),
  );
  assert.deepEqual(
    LAZY.filter((p) => p !== '@aws-sdk' && loaded.has(p)),
    [],
  );
});
