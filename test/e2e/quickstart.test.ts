/**
 * The README's quick start, end to end: the real server as a child process, real HTTP over
 * loopback, the operator CLI to register a reseller application, then a clean SIGTERM.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { walkThrough } from '../../scripts/walkthrough.ts';
import { WAIT_MS, waitUntil } from '../helpers/budget.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'bin/vrp.js');
const BASE = '/vps_reseller_provider/public';

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

const run = promisify(execFile);

describe('quick start against a real server process', () => {
  let dataDir: string;
  let child: ChildProcess;
  let origin: string;
  let env: NodeJS.ProcessEnv;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  let stderr = '';

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'vrp-e2e-'));
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    env = {
      ...process.env,
      VRP_PORT: String(port),
      VRP_DATA_DIR: dataDir,
      VRP_LOG_LEVEL: 'warn',
      VRP_SIMULATED_SPEED: '0',
    };
    child = spawn(process.execPath, ['src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (chunk) => {
      stderr += String(chunk);
    });
    exited = new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));

    await waitUntil(
      'the server to answer /healthz',
      async () => {
        if (child.exitCode !== null) assert.fail(`the server exited with ${child.exitCode}: ${stderr}`);
        try {
          return (await fetch(`${origin}/healthz`)).status === 200;
        } catch {
          return false; // Not listening yet.
        }
      },
      { everyMs: 100 },
    ).catch((err: Error) => assert.fail(`${err.message}: ${stderr}`));
  });

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** Registers reseller "acme" and an application for it, as the operator would. */
  async function registerClient(): Promise<{ client_id: string; client_secret: string }> {
    const opts = { cwd: ROOT, env, timeout: WAIT_MS };
    await run(process.execPath, [CLI, 'reseller', 'create', 'acme', '--json'], opts);
    const { stdout } = await run(
      process.execPath,
      [CLI, 'client', 'create', '--reseller', 'acme', '--json'],
      opts,
    );
    const created = JSON.parse(stdout);
    assert.equal(typeof created.client_id, 'string', stdout);
    assert.equal(typeof created.client_secret, 'string', stdout);
    return created;
  }

  test("the README's whole walk-through (scripts/walkthrough.ts, which scripts/image.sh runs against the image)", async () => {
    const passed: string[] = [];
    const steps = await walkThrough({
      origin,
      vrp: [process.execPath, CLI],
      env,
      reseller: 'readme',
      waitMs: WAIT_MS,
      log: (line) => passed.push(line),
    });
    assert.equal(passed.length, steps);
    assert.ok(passed.includes(`ok ${steps} terminate`), passed.join('\n'));
    assert.ok(
      passed.some((l) => / rescue, unrescue$/.test(l)),
      passed.join('\n'),
    );
  });

  test('token, test-connection, version, products, plans, then a clean SIGTERM', async () => {
    const { client_id, client_secret } = await registerClient();

    // A standard OAuth client discovers the token endpoint (RFC 8414) and uses client_secret_basic.
    const meta = await fetch(`${origin}/.well-known/oauth-authorization-server${BASE}`);
    assert.equal(meta.status, 200);
    const { token_endpoint } = (await meta.json()) as { token_endpoint: string };
    assert.equal(token_endpoint, `${origin}${BASE}/oauth/token`);

    const tokenRes = await fetch(token_endpoint, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    const tokenBody = (await tokenRes.json()) as Record<string, unknown>;
    assert.equal(tokenRes.status, 200, JSON.stringify(tokenBody));
    assert.equal(tokenRes.headers.get('cache-control'), 'no-store');
    assert.equal(tokenBody['token_type'], 'Bearer');
    assert.equal(tokenBody['expires_in'], 3600);
    const headers = {
      authorization: `Bearer ${tokenBody['access_token']}`,
      accept: 'application/json',
      'content-type': 'application/json',
    };
    const api = async (method: string, path: string) => {
      const res = await fetch(`${origin}${BASE}/api/v2/${path}`, { method, headers });
      return {
        status: res.status,
        body: (await res.json()) as any,
        requestId: res.headers.get('x-request-id'),
      };
    };

    const conn = await api('POST', 'test-connection');
    assert.equal(conn.status, 200, JSON.stringify(conn.body));
    assert.equal(conn.body.status, 'Success');
    assert.deepEqual(conn.body.data, []);
    assert.ok(conn.requestId);

    const version = await api('GET', 'version');
    assert.equal(version.status, 200);
    assert.deepEqual(version.body.data, { version: '2.0.0' });

    const products = await api('GET', 'products');
    assert.equal(products.status, 200);
    assert.ok(Array.isArray(products.body.data));
    assert.ok(products.body.data.length > 0, 'a fresh server has the demo catalogue');
    const first = products.body.data[0];
    assert.match(first.id, /^[0-9a-f-]{36}$/i);
    assert.equal(typeof first.config.ram.min, 'string');

    const plans = await api('GET', `product/${first.id}/plans`);
    assert.equal(plans.status, 200, JSON.stringify(plans.body));
    assert.ok(Array.isArray(plans.body.data.default_plans));
    for (const plan of plans.body.data.default_plans) {
      assert.match(plan.uuid, /^[0-9a-f-]{36}$/i);
      assert.ok(Number.isInteger(plan.cpu));
    }

    child.kill('SIGTERM');
    const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), WAIT_MS).unref());
    const result = await Promise.race([exited, timeout]);
    assert.notEqual(result, 'timeout', `the server did not exit on SIGTERM (VRP_TEST_WAIT): ${stderr}`);
    assert.deepEqual(result, { code: 0, signal: null }, stderr);
  });
});
