/**
 * The README's walk-through, step by step, against a running server: the operator's commands
 * through `vrp` (however the caller runs it: in a checkout, or inside the container image) and
 * every reseller call over HTTP, each answer checked. Used by `scripts/image.sh test` against the
 * image and by test/e2e/quickstart.test.ts against a plain process.
 *
 *   node scripts/walkthrough.ts ORIGIN -- COMMAND...   # COMMAND... runs `vrp`, e.g. bin/vrp.js
 *
 * The server must run the simulated hypervisor at speed 0 (VRP_SIMULATED_SPEED=0) with its demo
 * catalogue. Prints one line per step; exits 1 at the first step whose answer is wrong.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { promisify } from 'node:util';

const BASE = '/vps_reseller_provider/public';
const run = promisify(execFile);

/** An ed25519 public key as an OpenSSH line (the README pastes the user's own). */
function sshKey(): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  const part = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([part(Buffer.from('ssh-ed25519')), part(raw)]).toString('base64')} walkthrough`;
}

class StepFailed extends Error {}

function check(ok: unknown, what: string, seen: unknown): asserts ok {
  if (!ok) throw new StepFailed(`${what}; got ${typeof seen === 'string' ? seen : JSON.stringify(seen)}`);
}

export interface WalkthroughOptions {
  /** `http://127.0.0.1:8080`: where the server answers. */
  readonly origin: string;
  /** The program and leading arguments that run `vrp` (the rest of its arguments follow). */
  readonly vrp: readonly string[];
  /** Told each step as it passes. */
  readonly log?: (line: string) => void;
  /** How long to wait for a job's outcome, ms (default 60 s). */
  readonly waitMs?: number;
  /** The environment `vrp` runs in (default this process's). */
  readonly env?: NodeJS.ProcessEnv;
  /** The reseller it registers (default acme, as in the README). */
  readonly reseller?: string;
}

/** Runs the walk-through; resolves with the number of steps, rejects at the first wrong answer. */
export async function walkThrough(opts: WalkthroughOptions): Promise<number> {
  const log = opts.log ?? (() => {});
  const waitMs = opts.waitMs ?? 60_000;
  let steps = 0;
  const step = async <T>(name: string, body: () => Promise<T>): Promise<T> => {
    try {
      const result = await body();
      steps++;
      log(`ok ${steps} ${name}`);
      return result;
    } catch (err) {
      throw new StepFailed(
        `step ${steps + 1} (${name}): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  };
  const vrp = async (args: readonly string[], input?: string): Promise<string> => {
    const [program = '', ...lead] = opts.vrp;
    const child = run(program, [...lead, ...args], { timeout: waitMs, env: opts.env ?? process.env });
    if (input !== undefined) child.child.stdin?.end(input);
    return (await child).stdout;
  };

  const reseller = opts.reseller ?? 'acme';
  await step(`vrp reseller create ${reseller}`, () => vrp(['reseller', 'create', reseller]));
  const client = await step(`vrp client create --reseller ${reseller} --json`, async () => {
    const out = await vrp(['client', 'create', '--reseller', reseller, '--json']);
    const created = JSON.parse(out) as { client_id?: unknown; client_secret?: unknown };
    check(
      typeof created.client_id === 'string' && typeof created.client_secret === 'string',
      'a client',
      out,
    );
    return { id: created.client_id, secret: created.client_secret };
  });

  const token = await step('token (client credentials, Basic)', async () => {
    const res = await fetch(`${opts.origin}${BASE}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    const body = (await res.json()) as { access_token?: unknown };
    check(res.status === 200 && typeof body.access_token === 'string', '200 with an access token', body);
    return body.access_token;
  });

  const api = async (
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(`${opts.origin}${BASE}/api/v2/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: each step checks the fields it reads
    const json = (await res.json()) as { status?: string; data?: any; error_code?: string };
    check(res.status === 200 && json.status === 'Success', `${method} ${path}: 200 Success`, json);
    return json.data;
  };
  /** Polls status until no job is queued or running and the status is `want`. */
  const settled = async (sid: string, want: string) => {
    const until = Date.now() + waitMs;
    for (;;) {
      const s = await api('GET', `service/${sid}/status`);
      if (s.status === want && (s.job === null || s.job.status === 'succeeded')) return s;
      check(s.status !== 'failed' && s.job?.status !== 'failed', `status ${want}`, s);
      check(Date.now() < until, `status ${want} within ${waitMs} ms`, s);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  await step('test-connection', async () =>
    check((await api('POST', 'test-connection')).length === 0, '[]', ''),
  );
  await step('version', async () => {
    const v = await api('GET', 'version');
    check(v.version === '2.0.0', 'version 2.0.0', v);
  });
  const { product, template } = await step('products', async () => {
    const products = await api('GET', 'products');
    check(Array.isArray(products) && products.length > 0, 'the demo catalogue', products);
    return { product: String(products[0].id), template: String(products[0].os_templates[0].template_id) };
  });
  await step('plans', async () => {
    const plans = await api('GET', `product/${product}/plans`);
    check(Array.isArray(plans.default_plans), 'default_plans', plans);
  });

  const sid = await step('create-order', async () => {
    const order = { product_id: product, domain_name: 'web1.example.com', template_id: template };
    const data = await api(
      'POST',
      'service/create-order',
      { ...order, cpu: 2, ram: 4, hdd: 40, ip: 1, backup: 20 },
      {
        'idempotency-key': 'order-1001',
      },
    );
    check(typeof data[0]?.service_id === 'string', 'a service id', data);
    return String(data[0].service_id);
  });
  await step('create, then running', async () => {
    await api('POST', `service/${sid}/create`);
    await settled(sid, 'running');
  });
  await step('details', async () => {
    const d = await api('GET', `service/${sid}/details`);
    check(
      d.service_id === sid && typeof d.ip === 'string' && typeof d.password === 'string',
      'ip and password',
      d,
    );
  });
  await step('stop', async () => {
    await api('POST', `service/${sid}/stop`);
    await settled(sid, 'stopped');
  });
  await step('start', async () => {
    await api('POST', `service/${sid}/start`);
    await settled(sid, 'running');
  });
  await step('upgrade', async () => {
    await api('POST', `service/${sid}/upgrade`, { CPU: 4, RAM: 8, HDD: 80, IP: 2, BACKUP: 40 });
    await settled(sid, 'running');
  });
  await step('reset-password', async () => {
    await api('POST', `service/${sid}/reset-password`, { password: 'N3w-Secret-pass' });
    await settled(sid, 'running');
  });
  await step('suspend, unsuspend', async () => {
    await api('POST', `service/${sid}/suspend`, { suspend_reason: 'invoice overdue' });
    await settled(sid, 'suspended');
    await api('POST', `service/${sid}/unsuspend`);
    await settled(sid, 'running');
  });
  await step('jobs', async () => {
    const jobs = await api('GET', `service/${sid}/jobs`);
    check(
      Array.isArray(jobs) && jobs.every((j: { status?: string }) => j.status === 'succeeded'),
      'all succeeded',
      jobs,
    );
  });
  const bid = await step('backup create, backups', async () => {
    await api('POST', `service/${sid}/backup/create`);
    await settled(sid, 'running');
    const backups = await api('GET', `service/${sid}/backups`);
    check(Array.isArray(backups) && backups.length === 1, 'one backup', backups);
    return String(backups[0].backup_id);
  });
  await step('backup restore', async () => {
    await api('POST', `service/${sid}/backup/restore/${bid}`);
    await settled(sid, 'running');
  });
  await step('backup schedule', async () => {
    await api('POST', `service/${sid}/backup-schedule/create`, { BsTime: '03:30', BSDays: 'mon,thu' });
    const schedule = await api('GET', `service/${sid}/backup-schedule`);
    check(JSON.stringify(schedule).includes('03:30'), 'the schedule at 03:30', schedule);
  });
  await step('backup delete', async () => {
    await api('POST', `service/${sid}/backup/delete/${bid}`);
    await settled(sid, 'running');
  });
  await step('reinstall with an SSH key', async () => {
    await api('POST', `service/${sid}/reinstall`, { template_id: template, ssh_keys: [sshKey()] });
    await settled(sid, 'running');
    const d = await api('GET', `service/${sid}/details`);
    check(d.ssh_key_fingerprints?.length === 1, 'one key fingerprint', d);
  });
  await step('rescue, unrescue', async () => {
    const login = await api('POST', `service/${sid}/rescue`);
    check(login.username === 'root' && typeof login.password === 'string', 'the rescue login', login);
    await settled(sid, 'rescue');
    await api('POST', `service/${sid}/unrescue`);
    await settled(sid, 'running');
  });
  await step('console link', async () => {
    const link = await api('POST', `service/${sid}/console`);
    check(typeof link.url === 'string' && typeof link.expires_at === 'string', 'url and expires_at', link);
    const page = await fetch(new URL(new URL(link.url).pathname + new URL(link.url).search, opts.origin));
    check(page.status === 200 && (await page.text()).includes('<html'), 'the console page', page.status);
  });
  await step('vrp operator create alice, the console login page', async () => {
    await vrp(['operator', 'create', 'alice', '--password-stdin'], 'a long console password');
    const page = await fetch(`${opts.origin}/vps_reseller_provider/console/login`);
    check(page.status === 200, 'the login page', page.status);
  });
  await step('vrp host add, migrate, evacuate, list', async () => {
    await vrp([
      'host',
      'add',
      'sim-host-3',
      '--driver',
      'simulated',
      '--cpu',
      '64',
      '--ram',
      '256',
      '--disk',
      '4000',
    ]);
    await vrp(['host', 'migrate', sid, '--to', 'sim-host-3']);
    await settled(sid, 'running');
    await vrp(['host', 'evacuate', 'sim-host-1']);
    const list = await vrp(['host', 'list']);
    check(list.includes('sim-host-3'), 'sim-host-3 listed', list);
  });
  await step('terminate', async () => {
    await api('POST', `service/${sid}/terminate`);
    await settled(sid, 'terminated');
  });
  return steps;
}

if (import.meta.main) {
  const [origin, dashes, ...command] = process.argv.slice(2);
  if (!origin || dashes !== '--' || command.length === 0) {
    process.stderr.write(
      'usage: node scripts/walkthrough.ts ORIGIN -- COMMAND... (the command that runs vrp)\n',
    );
    process.exit(2);
  }
  try {
    const steps = await walkThrough({
      origin,
      vrp: command,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`walk-through: all ${steps} steps answered as the README says\n`);
  } catch (err) {
    process.stderr.write(`walk-through failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
