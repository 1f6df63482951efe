import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-cli-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function vrp(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['bin/vrp.js', ...args], {
    env: { ...process.env, VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr, json: () => JSON.parse(r.stdout) };
}

describe('vrp command', () => {
  test('reseller create and list', () => {
    const created = vrp(['reseller', 'create', 'acme', '--json']);
    assert.equal(created.code, 0, created.err);
    assert.equal(created.json().name, 'acme');
    const dup = vrp(['reseller', 'create', 'acme']);
    assert.equal(dup.code, 1);
    assert.match(dup.err, /exists already/);
    const list = vrp(['reseller', 'list', '--json']).json();
    assert.deepEqual(
      list.map((r: { name: string }) => r.name),
      ['acme'],
    );
  });

  test('client create prints the documented JSON once; list never shows secrets', () => {
    const c = vrp([
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
    const list = vrp(['client', 'list', '--json']);
    assert.ok(!list.out.includes(v.client_secret));
    assert.ok(!list.out.includes('scrypt'));
    assert.equal(list.json()[0].client_id, v.client_id);

    const rotated = vrp(['client', 'rotate-secret', v.client_id, '--json']).json();
    assert.notEqual(rotated.client_secret, v.client_secret);
    assert.equal(vrp(['client', 'disable', v.client_id]).code, 0);
    assert.equal(vrp(['client', 'list', '--json']).json()[0].enabled, false);
    assert.equal(vrp(['client', 'revoke-tokens', v.client_id]).code, 0);
    assert.equal(vrp(['client', 'disable', 'vrp_nope']).code, 1);
  });

  test('client create errors: unknown reseller, bad scopes, bad variant', () => {
    assert.equal(vrp(['client', 'create', '--reseller', 'nope']).code, 1);
    assert.equal(vrp(['client', 'create', '--reseller', 'acme', '--scopes', 'admin']).code, 2);
    assert.equal(vrp(['client', 'create', '--reseller', 'acme', '--variant', 'C']).code, 2);
    assert.equal(vrp(['client', 'create']).code, 2);
  });

  test('wrong arguments print usage and exit 2; a bad setting exits 2 naming it', () => {
    const bad = vrp(['frobnicate']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /usage: vrp/);
    assert.equal(vrp([]).code, 2);
    assert.equal(vrp(['reseller', 'create']).code, 2);
    const setting = vrp(['migrate'], { VRP_DRIVER: 'xen' });
    assert.equal(setting.code, 2);
    assert.match(setting.err, /VRP_DRIVER/);
  });

  test('catalog import and export round trip; a bad file changes nothing', () => {
    const file = join(dataDir, 'catalog.json');
    writeFileSync(file, JSON.stringify(DEMO_CATALOG));
    const imported = vrp(['catalog', 'import', file, '--json']);
    assert.equal(imported.code, 0, imported.err);
    assert.equal(imported.json().products, DEMO_CATALOG.products.length);
    const exported = vrp(['catalog', 'export']).json();
    assert.equal(exported.products.length, DEMO_CATALOG.products.length);
    writeFileSync(join(dataDir, 'again.json'), JSON.stringify(exported));
    vrp(['catalog', 'import', join(dataDir, 'again.json')]);
    assert.deepEqual(vrp(['catalog', 'export']).json(), exported);

    const broken = structuredClone(exported);
    broken.products[0].config.cpu.max = 0;
    broken.products[0].name = 'Changed';
    writeFileSync(join(dataDir, 'broken.json'), JSON.stringify(broken));
    const r = vrp(['catalog', 'import', join(dataDir, 'broken.json')]);
    assert.equal(r.code, 1);
    assert.match(r.err, /products\[0\]\.config\.cpu\.max/);
    assert.deepEqual(vrp(['catalog', 'export']).json(), exported, 'nothing changed');
    writeFileSync(join(dataDir, 'notjson.json'), '{');
    assert.equal(vrp(['catalog', 'import', join(dataDir, 'notjson.json')]).code, 1);
  });

  test('migrate reports an up-to-date schema', () => {
    const r = vrp(['migrate', '--json']);
    assert.equal(r.code, 0);
    assert.deepEqual(r.json(), { applied: [] });
  });
});

describe('vrp command against PostgreSQL', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, () => {
  test('migrate, reseller, client and catalog commands work on PostgreSQL', async () => {
    const { createPgDatabase } = await import('../helpers/stores.ts');
    const db = await createPgDatabase();
    try {
      const env = { VRP_DATABASE_URL: db.url };
      assert.equal(vrp(['migrate', '--json'], env).json().applied.length, 1);
      assert.equal(vrp(['reseller', 'create', 'pgco'], env).code, 0);
      const c = vrp(['client', 'create', '--reseller', 'pgco', '--json'], env).json();
      assert.match(c.client_id, /^vrp_/);
      assert.equal(vrp(['client', 'list', '--json'], env).json()[0].client_id, c.client_id);
      const file = join(dataDir, 'pg-catalog.json');
      writeFileSync(file, JSON.stringify(DEMO_CATALOG));
      assert.equal(vrp(['catalog', 'import', file], env).code, 0);
      assert.equal(vrp(['catalog', 'export'], env).json().products.length, DEMO_CATALOG.products.length);
    } finally {
      await db.drop();
    }
  });
});
