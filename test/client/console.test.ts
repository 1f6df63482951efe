/** The SDK's openConsole: a link the page opens once; a stopped server gets invalid_state. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type VrpClient, VrpError } from '../../client/src/index.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { baseUrlOf, sdkClient, smallOrder } from './sdk.ts';

describe('the SDK opens a service’s console in the browser', () => {
  let t: TestApp;
  let vrp: VrpClient;
  const clock = createManualClock();

  before(async () => {
    t = await createTestApp({}, { worker: true, store: 'sqlite', clock });
    vrp = await sdkClient(t);
  });
  after(() => t.close());

  test('openConsole answers a link under the base URL that opens the console page once', async () => {
    const [ordered] = await vrp.createOrder(smallOrder('sdk-console.example.com'));
    const id = ordered!.service_id;
    await vrp.create(id);
    await vrp.waitForStatus(id, 'running', { pollMs: 20 });

    const link = await vrp.openConsole(id);
    const base = await baseUrlOf(t);
    assert.ok(link.url.startsWith(`${base}/service-console/`), link.url);
    assert.equal(new Date(link.expiresAt).getTime(), clock.now() + 60_000);
    const page = await fetch(link.url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /sdk-console\.example\.com/);
    assert.equal((await fetch(link.url)).status, 403);

    await vrp.stop(id);
    await vrp.waitForStatus(id, 'stopped', { pollMs: 20 });
    await assert.rejects(vrp.openConsole(id), (err: unknown) => {
      assert.ok(err instanceof VrpError);
      assert.equal(err.errorCode, 'invalid_state');
      return true;
    });
  });
});
