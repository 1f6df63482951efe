/**
 * The data a fuzz run draws from, made through the real API of a test app: two resellers
 * ("acme", the one under test, and "globex", whose objects acme must never reach), each with
 * running services, a backup and a backup schedule; applications of both variants and
 * scopes; and tokens that are valid, expired, forged or malformed.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { SCOPES, type Scope } from '../../src/domain/scopes.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { call, type TestApp, waitForStatus } from './app.ts';
import type { FuzzAuth, FuzzWorld } from './fuzz-requests.ts';

const product = DEMO_CATALOG.products[0]!;

interface Fixture {
  readonly serviceId: string;
  readonly backupId: string | undefined;
  readonly scheduleId: string | undefined;
  readonly secrets: string[];
}

/** A service of the reseller of `token`: ordered, and unless `pending`, running with a backup and a schedule. */
async function fixture(t: TestApp, token: string, domain: string, pending = false): Promise<Fixture> {
  const order = await call(t, token, 'POST', 'service/create-order', {
    product_id: product.id,
    domain_name: domain,
    template_id: product.os_templates[0],
    cpu: product.config.cpu.min,
    ram: product.config.ram.min,
    hdd: product.config.hdd.min,
    ip: product.config.ip.min,
    backup: product.config.backup.min,
  });
  assert.equal(order.status, 200, JSON.stringify(order.body));
  const serviceId: string = order.body.data[0].service_id;
  const password: string = (await call(t, token, 'GET', `service/${serviceId}/details`)).body.data.password;
  if (pending) return { serviceId, backupId: undefined, scheduleId: undefined, secrets: [domain, password] };
  assert.equal((await call(t, token, 'POST', `service/${serviceId}/create`)).status, 200);
  await waitForStatus(t, token, serviceId, 'running');
  assert.equal((await call(t, token, 'POST', `service/${serviceId}/backup/create`)).status, 200);
  await waitForStatus(t, token, serviceId, 'running');
  const schedule = await call(t, token, 'POST', `service/${serviceId}/backup-schedule/create`, {
    BsTime: '04:15',
    BSDays: 'mon,thu',
  });
  assert.equal(schedule.status, 200, JSON.stringify(schedule.body));
  const backups = (await call(t, token, 'GET', `service/${serviceId}/backups`)).body.data;
  const schedules = (await call(t, token, 'GET', `service/${serviceId}/backup-schedule`)).body.data;
  return {
    serviceId,
    backupId: backups[0]?.backup_id,
    scheduleId: schedules[0]?.backup_schedule_id,
    secrets: [domain, password],
  };
}

const bearer = (token: string) => `Bearer ${token}`;

/**
 * A token with any payload, signed with the server's key as src/auth/tokens.ts signs: claims
 * the signer never writes (none, or of the wrong type) must still be refused cleanly.
 */
function forgeToken(key: Buffer, payload: unknown): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `vrp1.${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

export interface FuzzSetup {
  readonly world: FuzzWorld;
  /** A valid token of acme (variant B, every scope), for checking the server still works. */
  readonly liveToken: string;
}

export async function createFuzzWorld(t: TestApp): Promise<FuzzSetup> {
  // Registering an application and issuing through the endpoint each cost a slow hash, so
  // one application per reseller and variant; other scopes are tokens signed as the token
  // endpoint signs them when asked for a `scope`.
  const apps: Record<string, RegisteredApplication> = {
    ownB: await t.client({ reseller: 'acme' }),
    ownA: await t.client({ reseller: 'acme', variant: 'A' }),
    otherB: await t.client({ reseller: 'globex' }),
  };
  const ownB = await t.token({ client: apps['ownB'] });
  const acme = (await findResellerByName(t.ctx.store.db, 'acme'))!;
  const globex = (await findResellerByName(t.ctx.store.db, 'globex'))!;
  const now = Math.floor(Date.now() / 1000);
  const signed = (app: string, scopes: readonly Scope[], exp = now + 3600) =>
    t.ctx.signer.issue({
      clientId: app === 'unknown' ? 'vrp_000000000000000000000000' : apps[app]!.client_id,
      resellerId: app === 'otherB' ? globex.id : acme.id,
      scopes,
      version: 1,
      exp,
    });
  const ownA = signed('ownA', SCOPES);
  const otherB = signed('otherB', SCOPES);

  const owned = [
    await fixture(t, ownB, 'fuzz-acme-1.example.com'),
    await fixture(t, ownB, 'fuzz-acme-2.example.com'),
    await fixture(t, ownB, 'fuzz-acme-3.example.com', true),
  ];
  const theirs = [await fixture(t, otherB, 'fuzz-globex-1.example.com')];

  const all = [...SCOPES];
  const auth = (
    label: string,
    authorization: string | undefined,
    weight: number,
    valid?: Pick<FuzzAuth, 'variant' | 'tenant' | 'scopes'>,
  ): FuzzAuth => ({
    label,
    authorization,
    weight,
    variant: valid?.variant,
    tenant: valid?.tenant,
    scopes: valid?.scopes ?? [],
  });
  const auths: FuzzAuth[] = [
    auth('none', undefined, 2),
    auth('own-B', bearer(ownB), 8, { variant: 'B', tenant: 'own', scopes: all }),
    auth('own-A', bearer(ownA), 6, { variant: 'A', tenant: 'own', scopes: all }),
    auth('own-B-access-only', bearer(signed('ownB', ['access'])), 1, {
      variant: 'B',
      tenant: 'own',
      scopes: ['access'],
    }),
    auth('own-A-products-only', bearer(signed('ownA', ['products'])), 1, {
      variant: 'A',
      tenant: 'own',
      scopes: ['products'],
    }),
    auth('own-B-lower-case-scheme', `bearer ${ownB}`, 1, { variant: 'B', tenant: 'own', scopes: all }),
    auth('own-B-no-scopes', bearer(signed('ownB', [])), 1, { variant: 'B', tenant: 'own', scopes: [] }),
    auth('other-B', bearer(otherB), 2, { variant: 'B', tenant: 'other', scopes: all }),
    auth(
      'signed-without-scope-claim',
      bearer(
        forgeToken(t.ctx.keys.tokenKey, {
          c: apps['ownB']!.client_id,
          r: acme.id,
          v: 1,
          e: now + 3600,
          j: 'x',
        }),
      ),
      1,
    ),
    auth(
      'signed-claims-of-wrong-types',
      bearer(forgeToken(t.ctx.keys.tokenKey, { c: 5, r: null, s: ['service'], v: '1', e: now + 3600 })),
      1,
    ),
    // Expired but signed: the server still knows whose it is, so its errors are in that variant.
    auth('expired-own-B', bearer(signed('ownB', SCOPES, now - 1)), 1, {
      variant: 'B',
      tenant: undefined,
      scopes: [],
    }),
    auth('expired-own-A', bearer(signed('ownA', SCOPES, now - 1)), 1, {
      variant: 'A',
      tenant: undefined,
      scopes: [],
    }),
    auth('unknown-application', bearer(signed('unknown', SCOPES)), 1),
    auth('tampered', bearer(`${ownB.slice(0, -4)}${ownB.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`), 1),
    auth('garbage', 'Bearer abc', 1),
    auth('huge', bearer('x'.repeat(3000)), 1),
    auth('scheme-only', 'Bearer', 1),
    auth('two-tokens', `Bearer ${ownB} ${ownB}`, 1),
    auth('basic-on-api', basic('a', 'b'), 1),
  ];
  const basics: FuzzAuth[] = [
    auth('basic-own-B', basic(apps['ownB']!.client_id, apps['ownB']!.client_secret), 3),
    auth('basic-other-B', basic(apps['otherB']!.client_id, apps['otherB']!.client_secret), 1),
    auth('basic-wrong-secret', basic(apps['ownB']!.client_id, 'wrong'), 1),
    auth('basic-garbage', 'Basic !!!', 1),
    auth('basic-no-colon', `Basic ${Buffer.from('nocolon').toString('base64')}`, 1),
    auth('basic-bad-escape', `Basic ${Buffer.from('%zz:%zz').toString('base64')}`, 1),
    auth('basic-nul-id', basic('\u0000', 'x'), 1),
  ];

  const sub = (key: 'backupId' | 'scheduleId', list: Fixture[]) =>
    list.map((f) => f[key]).filter((v): v is string => v !== undefined);
  const world: FuzzWorld = {
    auths,
    basics,
    ids: {
      service_id: { own: owned.map((f) => f.serviceId), other: theirs.map((f) => f.serviceId), shared: [] },
      backup_id: { own: sub('backupId', owned), other: sub('backupId', theirs), shared: [] },
      backup_schedule_id: { own: sub('scheduleId', owned), other: sub('scheduleId', theirs), shared: [] },
      product_uuid: { own: [], other: [], shared: DEMO_CATALOG.products.map((p) => p.id) },
    },
    hints: {
      product_id: [...DEMO_CATALOG.products.map((p) => p.id), '00000000-0000-4000-8000-000000000000'],
      template_id: DEMO_CATALOG.os_templates.map((o) => o.id),
      domain_name: [
        'web1.example.com',
        'WEB2.Example.COM',
        'a',
        '-bad.example.com',
        `${'x'.repeat(63)}.example.com`,
        'under_score.example.com',
        'xn--bcher-kva.example',
      ],
      ...Object.fromEntries(
        Object.entries({
          cpu: [1, 2, 4],
          ram: [1, 2, 8],
          hdd: [20, 40, 160, 320],
          ip: [1, 2],
          backup: [0, 10, 20],
        }).flatMap(([k, v]) => [
          [k, v],
          [k.toUpperCase(), v],
        ]),
      ),
      password: ['Str0ng-pass!', 'weak', 'Abcdefg1', 'Only-Letters', 'tab\there1A', '\u{1d4df}assw0rd!x'],
      suspend_reason: ['billing overdue', ''],
      BsTime: ['03:30', '00:00', '23:59', '24:00', '3:30', '03:60', '12:00:00'],
      BSDays: [
        'mon',
        'tue,fri',
        'mon,mon',
        'sun,sat,fri',
        'MON',
        'mon,,tue',
        'funday',
        'mon,tue,wed,thu,fri,sat,sun',
      ],
      grant_type: ['client_credentials', 'client_credentials', 'password', ''],
      client_id: [apps['ownB']!.client_id, apps['otherB']!.client_id, 'vrp_unknown', 'x'.repeat(300)],
      client_secret: [apps['ownB']!.client_secret, apps['otherB']!.client_secret, 'wrong', ''],
      scope: ['access', 'service products', 'access products service', 'admin', '', 'access  service'],
    },
    secrets: { own: owned.flatMap((f) => f.secrets), other: theirs.flatMap((f) => f.secrets) },
  };
  return { world, liveToken: ownB };
}
