/**
 * The README's walk-through through Debian's nginx with deploy/nginx.conf: TLS ends at nginx (a
 * throwaway self-signed certificate openssl makes here), which passes requests to a server
 * process on loopback with X-Forwarded-For/-Proto. The client connects from 127.0.0.2 and nginx
 * from 127.0.0.1 (the server's VRP_TRUST_PROXY), so the audit log shows whose address it saw.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../scripts/postgres.ts';
import { WAIT_MS, waitUntil } from '../helpers/budget.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';
import { missingTool, toolPath } from '../helpers/tools.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'bin/vrp.js');
const BASE = '/vps_reseller_provider/public';
const OPS = '/vps_reseller_provider/operator/v1';
const CLIENT_ADDRESS = '127.0.0.2';
const run = promisify(execFile);

const skip = missingTool('nginx');

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * deploy/nginx.conf as shipped, with only what its comments say to change changed (the ports,
 * the certificate), inside a main configuration that keeps nginx's files in `dir`.
 */
function nginxConfig(dir: string, ports: { https: number; http: number; upstream: number }): string {
  const site = readFileSync(join(ROOT, 'deploy/nginx.conf'), 'utf8')
    .replace(/^\s*#.*$/gm, '')
    .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${ports.upstream};`)
    .replace('listen 443 ssl;', `listen 127.0.0.1:${ports.https} ssl;`)
    .replace('listen [::]:443 ssl;', '')
    .replace('listen 80;', `listen 127.0.0.1:${ports.http};`)
    .replace('listen [::]:80;', '')
    .replace('/etc/letsencrypt/live/vrp.example.com/fullchain.pem', join(dir, 'cert.pem'))
    .replace('/etc/letsencrypt/live/vrp.example.com/privkey.pem', join(dir, 'key.pem'));
  for (const original of ['127.0.0.1:8080', 'listen 443', '/etc/letsencrypt'])
    assert.ok(!site.includes(original), `deploy/nginx.conf changed: ${original} is still there`);
  writeFileSync(join(dir, 'site.conf'), site);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((name) => `${name}_temp_path ${join(dir, name)};`)
    .join('\n  ');
  return `daemon off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
${process.getuid?.() === 0 ? 'user root root;' : ''}
events { worker_connections 64; }
http {
  access_log off;
  ${temp}
  include ${join(dir, 'site.conf')};
}
`;
}

describe('the walk-through through nginx with TLS', { skip }, () => {
  let dir: string;
  let server: ServerProcess | undefined;
  let nginx: ChildProcess | undefined;
  let nginxExited: Promise<unknown> | undefined;
  let nginxOutput = '';
  let origin: string;
  let httpPort: number;
  let ca: Buffer;
  let cliEnv: NodeJS.ProcessEnv;

  /** A request over https to nginx, trusting the throwaway certificate, from CLIENT_ADDRESS. */
  function https(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
    return new Promise<Answer>((done, fail) => {
      const req = httpsRequest(
        `${origin}${path}`,
        { method, headers, ca, localAddress: CLIENT_ADDRESS, agent: false },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => {
            text += chunk;
          });
          res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, text }));
        },
      );
      req.on('error', fail);
      req.end(body);
    });
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vrp-tls-proxy-'));
    await run(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { timeout: WAIT_MS },
    );
    ca = readFileSync(join(dir, 'cert.pem'));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    cliEnv = { ...process.env, VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'warn' };
    server = await startServer({
      VRP_DATA_DIR: dataDir,
      VRP_SIMULATED_SPEED: '0',
      // nginx connects from 127.0.0.1: its X-Forwarded-For and -Proto are believed.
      VRP_TRUST_PROXY: '127.0.0.1',
    });
    const httpsPort = await freePort();
    httpPort = await freePort();
    origin = `https://127.0.0.1:${httpsPort}`;
    writeFileSync(
      join(dir, 'nginx.conf'),
      nginxConfig(dir, { https: httpsPort, http: httpPort, upstream: server.port }),
    );
    nginx = spawn(
      toolPath('nginx'),
      ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    nginx.stdout?.on('data', (d) => {
      nginxOutput += d;
    });
    nginx.stderr?.on('data', (d) => {
      nginxOutput += d;
    });
    const child = nginx;
    nginxExited = new Promise((done) => child.once('exit', done));
    await waitUntil(
      'nginx to answer over https',
      async () => {
        if (child.exitCode !== null) assert.fail(`nginx exited with ${child.exitCode}: ${nginxOutput}`);
        try {
          return (await https('GET', '/healthz')).status === 200;
        } catch {
          return false; // Not listening yet.
        }
      },
      { everyMs: 50 },
    );
  });

  after(async () => {
    if (nginx && nginx.exitCode === null && nginx.signalCode === null) {
      nginx.kill('SIGTERM');
      await nginxExited;
    }
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function cli(...args: string[]): Promise<any> {
    const { stdout } = await run(process.execPath, [CLI, ...args, '--json'], {
      cwd: ROOT,
      env: cliEnv,
      timeout: WAIT_MS,
    });
    return JSON.parse(stdout);
  }

  async function tokenFor(client: { client_id: string; client_secret: string }): Promise<string> {
    const res = await https(
      'POST',
      `${BASE}/oauth/token`,
      {
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      'grant_type=client_credentials',
    );
    assert.equal(res.status, 200, res.text);
    return JSON.parse(res.text).access_token;
  }

  test('token, create-order, create, status and the audit log, over https through nginx', async () => {
    // The server sees the client's scheme and host: its OAuth metadata names the https address.
    const meta = await https('GET', `/.well-known/oauth-authorization-server${BASE}`);
    assert.equal(JSON.parse(meta.text).token_endpoint, `${origin}${BASE}/oauth/token`);

    // Not acme: the README's walk-through below registers that one.
    await cli('reseller', 'create', 'tls-acme');
    const token = await tokenFor(await cli('client', 'create', '--reseller', 'tls-acme'));
    const api = async (
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) => {
      const res = await https(
        method,
        `${BASE}/api/v2/${path}`,
        {
          authorization: `Bearer ${token}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...headers,
        },
        body === undefined ? undefined : JSON.stringify(body),
      );
      return { status: res.status, body: JSON.parse(res.text) };
    };

    assert.equal((await api('POST', 'test-connection')).body.status, 'Success');
    const products = await api('GET', 'products');
    const product = products.body.data[0];
    const order = await api(
      'POST',
      'service/create-order',
      {
        product_id: product.id,
        domain_name: 'web1.example.com',
        template_id: product.os_templates[0].template_id,
        cpu: 2,
        ram: 4,
        hdd: 40,
        ip: 1,
        backup: 20,
      },
      { 'idempotency-key': 'order-1001' },
    );
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const sid = order.body.data[0].service_id;
    const created = await api('POST', `service/${sid}/create`);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await waitUntil('the service to run', async () => {
      const status = await api('GET', `service/${sid}/status`);
      return status.body.data.status === 'running';
    });

    // The audit log names the client's address (127.0.0.2), not nginx's (127.0.0.1).
    const operator = await cli('operator', 'create', 'ops');
    const opsToken = await tokenFor(operator);
    const audit = await https('GET', `${OPS}/audit?service_id=${sid}`, {
      authorization: `Bearer ${opsToken}`,
    });
    assert.equal(audit.status, 200, audit.text);
    const entries: { action: string; source_address: string | null }[] = JSON.parse(audit.text).data.items;
    const ordered = entries.find((e) => e.action === 'service.order');
    assert.ok(ordered, audit.text);
    assert.equal(ordered.source_address, CLIENT_ADDRESS);
    assert.deepEqual(
      [...new Set(entries.map((e) => e.source_address).filter((a) => a !== null))],
      [CLIENT_ADDRESS],
    );
  });

  test('plain http to nginx is redirected to https, never passed on', async () => {
    const res = await new Promise<Answer>((done, fail) => {
      const req = httpRequest(
        `http://127.0.0.1:${httpPort}${BASE}/oauth/token`,
        { method: 'POST', localAddress: CLIENT_ADDRESS, agent: false },
        (r) => {
          r.resume();
          r.on('end', () => done({ status: r.statusCode ?? 0, headers: r.headers, text: '' }));
        },
      );
      req.on('error', fail);
      req.end();
    });
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, `https://127.0.0.1${BASE}/oauth/token`);
  });

  test('the README’s whole walk-through over https through nginx', async () => {
    // scripts/walkthrough.ts as a reader runs it, trusting the proxy's throwaway certificate;
    // its operator commands run the CLI on the server's store.
    const walk = await run(
      process.execPath,
      ['scripts/walkthrough.ts', origin, '--', process.execPath, CLI],
      {
        cwd: ROOT,
        env: { ...cliEnv, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
        timeout: WAIT_MS,
      },
    ).catch((err: { stdout?: string; stderr?: string; message: string }) =>
      assert.fail(`${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}\nnginx: ${nginxOutput}`),
    );
    assert.match(walk.stdout, /walk-through: all \d+ steps answered as the README says/);
  });
});
