import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CONSOLE } from '../../src/http/base-path.ts';
import { createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { consoleCookie } from '../helpers/console-session.ts';
import { createTestOperator } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';

describe('console: rescue on the service page', () => {
  let t: TestApp;
  let cookie: string;
  let token: string;
  before(async () => {
    t = await createTestApp({}, { worker: true });
    token = await t.token({ reseller: 'acme' });
    await createTestOperator(t, { name: 'rita', password: PASSWORD });
    cookie = await consoleCookie(t, 'rita', PASSWORD);
  });
  after(() => t.close());

  const page = async (id: string) => {
    const res = await t.app.inject({ method: 'GET', url: `${CONSOLE}/services/${id}`, headers: { cookie } });
    assert.equal(res.statusCode, 200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1];
    assert.ok(csrf);
    return { html: res.body, csrf };
  };
  const post = (id: string, path: string, csrf: string) =>
    t.app.inject({
      method: 'POST',
      url: `${CONSOLE}/services/${id}/${path}`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf }).toString(),
    });

  test('Rescue shows the login once; in rescue the page offers Leave rescue and says when it ends', async () => {
    const id = await orderRunning(t, token, 'console-rescue.example.com');
    const running = await page(id);
    assert.match(running.html, /action="[^"]*\/services\/[^"]+\/rescue"/);
    assert.doesNotMatch(running.html, /Leave rescue/, 'a running service is not in rescue');

    const answered = await post(id, 'rescue', running.csrf);
    assert.equal(answered.statusCode, 200, answered.body.slice(0, 500));
    assert.equal(answered.headers['cache-control'], 'no-store');
    const password = /<dt>Password<\/dt><dd class="mono">([^<]+)<\/dd>/.exec(answered.body)?.[1];
    assert.ok(password && password.length >= 20, answered.body.slice(0, 2000));
    assert.match(answered.body, /<dt>User<\/dt><dd class="mono">root<\/dd>/);

    await waitForStatus(t, token, id, 'rescue');
    const rescued = await page(id);
    assert.match(rescued.html, />Leave rescue</);
    assert.match(rescued.html, /Rescue ends by itself/);
    assert.doesNotMatch(rescued.html, /action="[^"]*\/rescue"/, 'no second rescue');
    assert.ok(!rescued.html.includes(password), 'the password is not shown again');

    const left = await post(id, 'unrescue', rescued.csrf);
    assert.equal(left.statusCode, 303);
    await waitForStatus(t, token, id, 'running');
    assert.doesNotMatch((await page(id)).html, /Leave rescue/);
  });
});
