import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Document, Spectral } from '@stoplight/spectral-core';
import Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { renderOpenApi, renderOperatorOpenApi } from '../../helpers/openapi.ts';
import { OPS } from '../../helpers/operator.ts';

const rendered = await renderOperatorOpenApi();
const doc = JSON.parse(rendered);
const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops as Record<string, any>).map(([method, op]) => ({ path, method, op })),
);

test('docs/openapi-operator.json matches the operator routes (run `npm run openapi` after changing them)', () => {
  const committed = readFileSync(new URL('../../../docs/openapi-operator.json', import.meta.url), 'utf8');
  assert.equal(committed, rendered);
});

// The routes of docs/design/contract.md#operator-api.
test('it holds every operator route of the contract, and the reseller document none of them', async () => {
  const has = (method: string, path: string) => doc.paths[`${OPS}${path}`]?.[method] !== undefined;
  for (const [method, path] of [
    ['get', '/whoami'],
    ['get', '/resellers'],
    ['post', '/resellers'],
    ['get', '/resellers/{reseller_id}'],
    ['post', '/resellers/{reseller_id}/disable'],
    ['post', '/resellers/{reseller_id}/enable'],
    ['put', '/resellers/{reseller_id}/quota'],
    ['get', '/services'],
    ['get', '/services/{service_id}'],
    ['post', '/services/{service_id}/create'],
    ['post', '/services/{service_id}/upgrade'],
    ['post', '/services/{service_id}/backup/restore/{backup_id}'],
    ['get', '/jobs'],
    ['post', '/jobs/{job_id}/retry'],
    ['post', '/jobs/{job_id}/cancel'],
    ['get', '/hosts'],
    ['post', '/hosts/{host_id}/drain'],
    ['post', '/hosts/{host_id}/activate'],
    ['get', '/usage'],
    ['get', '/audit'],
  ]) {
    assert.ok(has(method!, path!), `${method} ${path}`);
  }
  assert.ok(Object.keys(doc.paths).every((p) => p.startsWith(OPS)));
  const reseller = JSON.parse(await renderOpenApi());
  assert.ok(Object.keys(reseller.paths).every((p) => !p.startsWith(OPS)));
});

test('every operation has its metadata, the operator scope, variant B only and no X-Envelope-Variant', () => {
  const ids = operations.map((o) => o.op.operationId);
  assert.equal(new Set(ids).size, ids.length);
  for (const { path, method, op } of operations) {
    const what = `${method} ${path}`;
    assert.match(op.operationId, /^[a-z][A-Za-z0-9]*$/, what);
    assert.ok(op.summary && op.description && op.tags?.length === 1, what);
    assert.ok(!JSON.stringify(op.parameters).includes('EnvelopeVariant'), what);
    if (path.endsWith('/openapi.json')) continue;
    assert.deepEqual(op.security, [{ oauth2: ['operator'] }, { bearer: [] }], what);
    const ok = op.responses['200'].content['application/json'].schema;
    assert.equal(ok.title, 'Variant B', what);
    assert.ok(op.responses['403'], what);
  }
  assert.equal(doc.components.schemas.ErrorEnvelopeA, undefined);
  assert.deepEqual(Object.keys(doc.components.securitySchemes.oauth2.flows.clientCredentials.scopes), [
    'operator',
  ]);
  // The usage report also comes as CSV; conflicts are documented where they happen.
  assert.ok(doc.paths[`${OPS}/usage`].get.responses['200'].content['text/csv']);
  assert.ok(doc.paths[`${OPS}/jobs/{job_id}/cancel`].post.responses['409']);
});

test('Spectral (spectral:oas) finds no error in docs/openapi-operator.json', async () => {
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as never, 'recommended']] });
  const results = await spectral.run(new Document(rendered, Parsers.Json, 'docs/openapi-operator.json'));
  const errors = results
    .filter((r) => r.severity === 0)
    .map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`);
  assert.deepEqual(errors, []);
});

describe('the operator document served', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, { demo: false });
  });
  after(() => t.close());

  test('GET OPS/openapi.json is docs/openapi-operator.json, without a token', async () => {
    const res = await t.app.inject({ method: 'GET', url: `${OPS}/openapi.json` });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), doc);
  });
});
