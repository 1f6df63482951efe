import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Type } from 'typebox';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { apiRoute } from '../../src/http/api-route.ts';
import { errorEnvelope } from '../../src/http/envelope.ts';
import { buildOpenApi } from '../../src/http/openapi.ts';
import { EmptyBody, Id, InputId, ServiceParams } from '../../src/http/schemas/common.ts';
import { API, BASE } from '../helpers/app.ts';
import { renderOpenApi } from '../helpers/openapi.ts';
import { checkerFor } from '../helpers/response-check.ts';

const rendered = await renderOpenApi();
const doc = JSON.parse(rendered);
const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops as Record<string, any>).map(([method, op]) => ({ path, method, op })),
);
const apiOps = operations.filter((o) => o.op.security);
const op = (method: string, path: string) => doc.paths[path]?.[method];

test('docs/openapi.json matches the route schemas (run `npm run openapi` after changing routes)', () => {
  const committed = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
  assert.equal(committed, rendered);
});

test('the OpenAPI document lists every route of the interface document', () => {
  const paths = Object.keys(doc.paths);
  for (const p of [
    `${API}/test-connection`,
    `${API}/version`,
    `${API}/products`,
    `${API}/product/{product_uuid}/plans`,
    `${API}/service/create-order`,
    `${BASE}/v2/service/create-order`,
    `${API}/service/{service_id}/create`,
    `${API}/service/{service_id}/terminate`,
    `${API}/service/{service_id}/suspend`,
    `${API}/service/{service_id}/unsuspend`,
    `${API}/service/{service_id}/upgrade`,
    `${API}/service/{service_id}/start`,
    `${API}/service/{service_id}/stop`,
    `${API}/service/{service_id}/restart`,
    `${API}/service/{service_id}/reset-password`,
    `${API}/service/{service_id}/details`,
    `${API}/service/{service_id}/status`,
    `${API}/service/{service_id}/jobs`,
    `${API}/service/{service_id}/backups`,
    `${API}/service/{service_id}/backup/create`,
    `${API}/service/{service_id}/backup/restore/{backup_id}`,
    `${API}/service/{service_id}/backup/delete/{backup_id}`,
    `${API}/service/{service_id}/backup-schedule`,
    `${API}/service/{service_id}/backup-schedule/create`,
    `${API}/service/{service_id}/backup-schedule/delete/{backup_schedule_id}`,
    `${BASE}/oauth/token`,
    `/.well-known/oauth-authorization-server${BASE}`,
    '/healthz',
    '/readyz',
    '/metrics',
    `${BASE}/openapi.json`,
    `${BASE}/docs`,
  ]) {
    assert.ok(paths.includes(p), p);
  }
  assert.ok(op('get', `${API}/products`) && op('post', `${API}/products`));
  assert.ok(
    op('get', `${API}/service/{service_id}/details`) && op('post', `${API}/service/{service_id}/details`),
  );
  assert.deepEqual(
    op('post', `${API}/service/{service_id}/upgrade`).requestBody.content[
      'application/json'
    ].schema.required.sort(),
    ['BACKUP', 'CPU', 'HDD', 'IP', 'RAM'],
  );
});

describe('every operation carries its metadata', () => {
  test('a unique camelCase operationId, tags the document defines, a summary and a description', () => {
    const ids = operations.map((o) => o.op.operationId);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    const tags = new Set(doc.tags.map((t: { name: string }) => t.name));
    for (const { path, method, op } of operations) {
      const where = `${method} ${path}`;
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]*$/, where);
      assert.ok(op.tags?.length > 0 && op.tags.every((t: string) => tags.has(t)), `${where} tags`);
      assert.ok(op.summary?.length > 0, `${where} summary`);
      assert.ok(op.description?.length > 0, `${where} description`);
    }
  });

  test('the SDK’s method names name the operations it calls', () => {
    const svc = (p: string) => `${API}/service/{service_id}/${p}`;
    const expected: Record<string, [string, string]> = {
      testConnection: ['post', `${API}/test-connection`],
      version: ['get', `${API}/version`],
      products: ['get', `${API}/products`],
      plans: ['get', `${API}/product/{product_uuid}/plans`],
      createOrder: ['post', `${API}/service/create-order`],
      create: ['post', svc('create')],
      terminate: ['post', svc('terminate')],
      suspend: ['post', svc('suspend')],
      unsuspend: ['post', svc('unsuspend')],
      start: ['post', svc('start')],
      stop: ['post', svc('stop')],
      restart: ['post', svc('restart')],
      upgrade: ['post', svc('upgrade')],
      resetPassword: ['post', svc('reset-password')],
      details: ['get', svc('details')],
      status: ['get', svc('status')],
      jobs: ['get', svc('jobs')],
      backups: ['get', svc('backups')],
      createBackup: ['post', svc('backup/create')],
      restoreBackup: ['post', svc('backup/restore/{backup_id}')],
      deleteBackup: ['post', svc('backup/delete/{backup_id}')],
      backupSchedules: ['get', svc('backup-schedule')],
      createBackupSchedule: ['post', svc('backup-schedule/create')],
      deleteBackupSchedule: ['post', svc('backup-schedule/delete/{backup_schedule_id}')],
    };
    for (const [id, [method, path]] of Object.entries(expected)) {
      assert.equal(op(method, path)?.operationId, id, `${method} ${path}`);
    }
  });
});

describe('API operations', () => {
  test('200 in both envelopes: B with the typed payload, A with its JSON text and the schema of that text', () => {
    assert.ok(apiOps.length >= 28);
    for (const { path, method, op } of apiOps) {
      const where = `${method} ${path}`;
      const [b, a] = op.responses['200'].content['application/json'].schema.oneOf;
      assert.deepEqual(b.required, ['status', 'message', 'data'], where);
      assert.equal(b.properties.status.const, 'Success', where);
      const data = b.properties.data;
      assert.ok(data.$ref || data.type, `${where}: variant B's data is typed`);
      assert.equal(a.properties.success.const, 'true', where);
      assert.equal(a.properties.data.type, 'string', where);
      assert.equal(a.properties.data.contentMediaType, 'application/json', where);
      assert.ok(a.properties.data.contentSchema, `${where}: variant A's data has a contentSchema`);
    }
    const details = op('get', `${API}/service/{service_id}/details`).responses['200'].content[
      'application/json'
    ].schema.oneOf;
    assert.equal(details[0].properties.data.$ref, '#/components/schemas/ServiceDetails');
    assert.ok(doc.components.schemas.ServiceDetails.required.includes('password'));
    // The order is the one payload that differs by variant
    // (docs/design/contract.md#payloads-that-differ-by-variant).
    const order = op('post', `${API}/service/create-order`).responses['200'].content['application/json']
      .schema.oneOf;
    assert.equal(order[0].properties.data.type, 'array');
    assert.equal(order[1].properties.data.contentSchema.$ref, '#/components/schemas/OrderedServiceA');
  });

  test('the error envelope on 400, 401, 403, 404, 429, 500 and 503; 413 and 415 where a body is read', () => {
    for (const { path, method, op } of apiOps) {
      const statuses = ['400', '401', '403', '404', '429', '500', '503'];
      if (op.requestBody) statuses.push('413', '415');
      for (const s of statuses) {
        assert.equal(op.responses[s]?.$ref, `#/components/responses/Error${s}`, `${method} ${path} ${s}`);
      }
      assert.equal(!!op.responses['413'], !!op.requestBody, `${method} ${path} 413 only with a body`);
    }
    for (const [name, response] of Object.entries(doc.components.responses) as [string, any][]) {
      const status = Number(name.slice('Error'.length));
      const schema = response.content['application/json'].schema;
      assert.deepEqual(schema.allOf, [{ $ref: '#/components/schemas/ErrorEnvelope' }]);
      const codes = Object.entries(ERROR_CODES).filter(([, s]) => s === status);
      assert.deepEqual(
        schema.properties.error_code.enum,
        codes.map(([c]) => c),
      );
    }
    assert.ok(doc.components.responses.Error401.headers['WWW-Authenticate']);
    assert.ok(doc.components.responses.Error429.headers['Retry-After']);
  });

  test('X-Envelope-Variant on each, Idempotency-Key on orders, ids as UUIDs, bearer or OAuth 2.0 security', () => {
    const variant = doc.components.parameters.EnvelopeVariant;
    assert.deepEqual(
      [variant.name, variant.in, variant.schema.enum],
      ['X-Envelope-Variant', 'header', ['A', 'B']],
    );
    for (const { path, method, op } of apiOps) {
      assert.ok(
        op.parameters.some((p: any) => p.$ref === '#/components/parameters/EnvelopeVariant'),
        `${method} ${path}`,
      );
      for (const p of op.parameters.filter((p: any) => p.in === 'path')) {
        assert.equal(p.schema.format, 'uuid', `${method} ${path} ${p.name}`);
      }
      assert.deepEqual(op.security, [{ oauth2: [op.security[0].oauth2[0]] }, { bearer: [] }]);
    }
    for (const path of [`${API}/service/create-order`, `${BASE}/v2/service/create-order`]) {
      const key = op('post', path).parameters.find((p: any) => p.name === 'idempotency-key');
      assert.deepEqual([key?.in, key?.required, key?.schema.pattern], ['header', false, '^[!-~]{1,255}$']);
      const body = op('post', path).requestBody.content['application/json'].schema;
      assert.equal(body.properties.product_id.format, 'uuid');
    }
    assert.equal(doc.components.schemas.Job.properties.job_id.format, 'uuid');
    const headers = (method: string, path: string) => Object.keys(op(method, path).responses['200'].headers);
    assert.ok(headers('post', `${API}/service/{service_id}/start`).includes('X-Job-Id'));
    assert.ok(headers('post', `${API}/service/{service_id}/backup/create`).includes('X-Job-Id'));
    assert.ok(headers('post', `${API}/service/create-order`).includes('Idempotent-Replayed'));
    assert.deepEqual(doc.components.securitySchemes.bearer, {
      type: 'http',
      scheme: 'bearer',
      description: doc.components.securitySchemes.bearer.description,
    });
    assert.equal(
      doc.components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl,
      `${BASE}/oauth/token`,
    );
  });
});

describe('the routes outside the envelopes', () => {
  test('the token endpoint: a form or JSON, RFC 6749 answers and errors', () => {
    const token = op('post', `${BASE}/oauth/token`);
    assert.equal(token.security, undefined);
    assert.deepEqual(Object.keys(token.requestBody.content).sort(), [
      'application/json',
      'application/x-www-form-urlencoded',
    ]);
    const schema = (s: string) => token.responses[s].content['application/json'].schema;
    assert.equal(schema('200').$ref, '#/components/schemas/TokenResponse');
    assert.deepEqual(doc.components.schemas.TokenResponse.required, [
      'access_token',
      'token_type',
      'expires_in',
      'scope',
    ]);
    assert.deepEqual(schema('401').properties.error.enum, ['invalid_client']);
    assert.deepEqual(schema('400').properties.error.enum, [
      'invalid_request',
      'unsupported_grant_type',
      'invalid_scope',
    ]);
    assert.ok(token.responses['429'].headers['Retry-After']);
    assert.ok(!JSON.stringify(token.responses).includes('Envelope'), 'no envelope at the token endpoint');
  });

  test('metadata, probes, metrics and the reference with their media types', () => {
    const media = (method: string, path: string, status = '200') =>
      Object.keys(op(method, path).responses[status].content ?? {});
    assert.deepEqual(media('get', `/.well-known/oauth-authorization-server${BASE}`), ['application/json']);
    assert.deepEqual(media('get', '/healthz'), ['application/json']);
    assert.deepEqual(media('get', '/readyz'), ['application/json']);
    assert.deepEqual(media('get', '/readyz', '503'), ['application/json']);
    assert.deepEqual(media('get', '/metrics'), ['text/plain']);
    assert.deepEqual(media('get', `${BASE}/docs`), ['text/html']);
    assert.deepEqual(media('get', `${BASE}/openapi.json`), ['application/json']);
    assert.ok(op('get', '/docs').responses['302']);
  });
});

test('a new route needs only its own schema metadata to appear complete in the document', () => {
  const options = apiRoute('service', {
    operationId: 'widgets',
    tags: ['Widgets'],
    summary: 'List widgets',
    description: 'Widgets of a service.',
    params: ServiceParams,
    querystring: Type.Object({ after: Type.Optional(InputId('Only those after this one')) }),
    body: EmptyBody,
    response: { 200: Type.Array(Type.Object({ widget_id: Id() }, { title: 'Widget' })) },
  });
  const built = buildOpenApi([
    {
      method: 'POST',
      url: `${API}/service/:service_id/widgets`,
      schema: options.schema,
      scope: 'service',
      oauth: false,
    },
  ]) as any;
  const widgets = built.paths[`${API}/service/{service_id}/widgets`].post;
  assert.equal(widgets.operationId, 'widgets');
  assert.deepEqual(built.tags, [{ name: 'Widgets' }]);
  assert.deepEqual(
    widgets.parameters.map((p: any) => p.name ?? p.$ref),
    ['service_id', 'after', '#/components/parameters/EnvelopeVariant', '#/components/parameters/RequestId'],
  );
  assert.equal(widgets.parameters[1].schema.format, 'uuid');
  assert.deepEqual(Object.keys(widgets.responses), [
    '200',
    '400',
    '401',
    '403',
    '404',
    '413',
    '415',
    '429',
    '500',
    '503',
  ]);
  assert.deepEqual(built.components.schemas.Widget.properties.widget_id, { type: 'string', format: 'uuid' });
  // The document-only keyword is gone from what the route validates with, and only there.
  assert.ok(!JSON.stringify(widgets).includes('x-document-only'));
});

describe('the response checker of the test harness refuses what the document does not give', () => {
  const checker = checkerFor(doc);
  const version = `${API}/version`;
  const ok = (body: unknown, status = 200, contentType = 'application/json; charset=utf-8') => ({
    method: 'GET',
    url: version,
    status,
    contentType,
    body: JSON.stringify(body),
  });

  test('answers the document gives pass', () => {
    assert.equal(
      checker.problem(ok({ status: 'Success', message: '', data: { version: '2.0.0' } })),
      undefined,
    );
    assert.equal(
      checker.problem(ok({ success: 'true', message: '', data: JSON.stringify({ version: '2.0.0' }) })),
      undefined,
    );
    assert.equal(checker.problem(ok(errorEnvelope('A', 'no', 'invalid_token'), 401)), undefined);
  });

  test('a payload of another shape, in either variant', () => {
    assert.match(
      checker.problem(ok({ status: 'Success', message: '', data: { version: 2 } })) ?? '',
      /version/,
    );
    assert.match(
      checker.problem(ok({ success: 'true', message: '', data: JSON.stringify({ v: '2.0.0' }) })) ?? '',
      /variant A's data/,
    );
    assert.match(
      checker.problem(ok({ status: 'Success', message: '', data: {}, extra: 1 })) ?? '',
      /version \(version\)/,
    );
  });

  test('an error code of another status, an undeclared status, another media type', () => {
    assert.match(
      checker.problem(ok(errorEnvelope('B', 'no', 'service_not_found'), 401)) ?? '',
      /answered 401/,
    );
    assert.match(
      checker.problem(ok(errorEnvelope('B', 'no', 'internal_error'), 418)) ?? '',
      /declares no such answer/,
    );
    assert.match(checker.problem(ok({ version: '2.0.0' }, 200, 'text/plain')) ?? '', /as text\/plain/);
  });

  test('a request no operation matches must be answered with an error envelope', () => {
    const unmatched = { method: 'DELETE', url: `${version}?x=1`, contentType: 'application/json' };
    assert.equal(
      checker.problem({
        ...unmatched,
        status: 405,
        body: JSON.stringify(errorEnvelope('B', 'no', 'method_not_allowed')),
      }),
      undefined,
    );
    // What Node's parser refuses is answered by client-error.ts, in variant B.
    for (const code of ['validation_failed', 'request_timeout', 'headers_too_large'] as const) {
      const body = JSON.stringify(errorEnvelope('B', 'refused', code));
      assert.equal(checker.problem({ ...unmatched, status: ERROR_CODES[code], body }), undefined);
    }
    assert.match(checker.problem({ ...unmatched, status: 200, body: '{}' }) ?? '', /no operation/);
    assert.match(checker.problem({ ...unmatched, status: 404, body: '{"error":"x"}' }) ?? '', /no operation/);
  });
});
