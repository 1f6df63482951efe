import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderOpenApi } from '../helpers/openapi.ts';

test('docs/openapi.json matches the route schemas (run `npm run openapi` after changing routes)', async () => {
  const committed = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
  assert.equal(committed, await renderOpenApi());
});

test('the OpenAPI document lists every route of the interface document', async () => {
  const doc = JSON.parse(await renderOpenApi());
  const paths = Object.keys(doc.paths);
  const api = '/vps_reseller_provider/public/api/v2';
  for (const p of [
    `${api}/test-connection`,
    `${api}/version`,
    `${api}/products`,
    `${api}/product/{product_uuid}/plans`,
    `${api}/service/create-order`,
    '/vps_reseller_provider/public/v2/service/create-order',
    `${api}/service/{service_id}/create`,
    `${api}/service/{service_id}/terminate`,
    `${api}/service/{service_id}/suspend`,
    `${api}/service/{service_id}/unsuspend`,
    `${api}/service/{service_id}/upgrade`,
    `${api}/service/{service_id}/start`,
    `${api}/service/{service_id}/stop`,
    `${api}/service/{service_id}/restart`,
    `${api}/service/{service_id}/reset-password`,
    `${api}/service/{service_id}/details`,
    `${api}/service/{service_id}/status`,
    `${api}/service/{service_id}/jobs`,
    `${api}/service/{service_id}/backups`,
    `${api}/service/{service_id}/backup/create`,
    `${api}/service/{service_id}/backup/restore/{backup_id}`,
    `${api}/service/{service_id}/backup/delete/{backup_id}`,
    `${api}/service/{service_id}/backup-schedule`,
    `${api}/service/{service_id}/backup-schedule/create`,
    `${api}/service/{service_id}/backup-schedule/delete/{backup_schedule_id}`,
    '/vps_reseller_provider/public/oauth/token',
  ]) {
    assert.ok(paths.includes(p), p);
  }
  assert.ok(doc.paths[`${api}/products`].get && doc.paths[`${api}/products`].post);
  assert.ok(
    doc.paths[`${api}/service/{service_id}/details`].get &&
      doc.paths[`${api}/service/{service_id}/details`].post,
  );
  assert.deepEqual(
    doc.paths[`${api}/service/{service_id}/upgrade`].post.requestBody.content[
      'application/json'
    ].schema.required.sort(),
    ['BACKUP', 'CPU', 'HDD', 'IP', 'RAM'],
  );
});
