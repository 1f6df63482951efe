import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CONSOLE } from '../../src/http/base-path.ts';
import { call, createTestApp, orderRunning, type TestApp } from '../helpers/app.ts';
import { consoleCookie } from '../helpers/console-session.ts';
import { createTestOperator } from '../helpers/operator.ts';
import { startPowerDnsApiStub } from '../helpers/powerdns.ts';

const PASSWORD = 'correct horse battery staple';
const B = { 'x-envelope-variant': 'B' };

async function consoleOf(t: TestApp) {
  await createTestOperator(t, { name: 'rita', password: PASSWORD });
  const cookie = await consoleCookie(t, 'rita', PASSWORD);
  const page = async (id: string, flashCookie?: string) => {
    const res = await t.app.inject({
      method: 'GET',
      url: `${CONSOLE}/services/${id}`,
      headers: { cookie: flashCookie ? `${cookie}; ${flashCookie}` : cookie },
    });
    assert.equal(res.statusCode, 200, res.body.slice(0, 500));
    const csrf = /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1];
    assert.ok(csrf);
    return { html: res.body, csrf };
  };
  const post = (id: string, path: string, fields: Record<string, string>) =>
    t.app.inject({
      method: 'POST',
      url: `${CONSOLE}/services/${id}/${path}`,
      // As a browser sends it: a refusal goes back to the page the form was on.
      headers: {
        cookie,
        'content-type': 'application/x-www-form-urlencoded',
        referer: `http://localhost${CONSOLE}/services/${id}`,
      },
      payload: new URLSearchParams(fields).toString(),
    });
  /** The page a form's answer sends the browser to, with the message it carries (its flash cookie). */
  const flash = async (res: { headers: Record<string, unknown> }, id: string) => {
    assert.equal(String(res.headers['location']), `${CONSOLE}/services/${id}`);
    const setCookie = [res.headers['set-cookie']].flat().map(String);
    const carried = setCookie.find((c) => c.startsWith('vrp_console_flash='))?.split(';')[0];
    assert.ok(carried, `no flash in ${setCookie.join(' | ')}`);
    return (await page(id, carried)).html;
  };
  return { page, post, flash };
}

describe('console: reverse DNS on the service page', () => {
  let t: TestApp;
  let token: string;
  let dnsApi: Awaited<ReturnType<typeof startPowerDnsApiStub>>;
  let c: Awaited<ReturnType<typeof consoleOf>>;
  before(async () => {
    dnsApi = await startPowerDnsApiStub();
    t = await createTestApp({ ...dnsApi.env, VRP_RDNS_DEFAULT: 'ip-{ip}.example.net' }, { worker: true });
    token = await t.token({ reseller: 'acme' });
    c = await consoleOf(t);
  });
  after(async () => {
    await t.close();
    await dnsApi.close();
  });

  test('the page lists each address’s PTR; the operator sets one, sees a refusal, and resets it to the default', async () => {
    const id = await orderRunning(t, token, 'console-rdns.example.com');
    const ip = (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data
      .ips[0] as string;
    const byDefault = `ip-${ip.replaceAll('.', '-')}.example.net`;
    const first = await c.page(id);
    assert.match(first.html, /<h2 id="rdns-h">Reverse DNS<\/h2>/);
    assert.ok(
      first.html.includes(`<td class="mono">${ip}</td><td class="mono">${byDefault}</td>`),
      first.html,
    );

    const set = await c.post(id, 'rdns', { _csrf: first.csrf, ip, ptr: 'Mail.Example.com' });
    assert.equal(set.statusCode, 303, set.body);
    const after = await c.flash(set, id);
    assert.match(after, /The PTR record of [0-9.]+ is mail\.example\.com\./);
    assert.ok(after.includes(`<td class="mono">${ip}</td><td class="mono">mail.example.com</td>`));
    assert.deepEqual((await call(t, token, 'GET', `service/${id}/rdns`, undefined, B)).body.data, [
      { ip, ptr: 'mail.example.com' },
    ]);

    const refused = await c.post(id, 'rdns', { _csrf: first.csrf, ip, ptr: 'not a name' });
    assert.equal(refused.statusCode, 303);
    assert.match(await c.flash(refused, id), /ptr must be a host name/);

    const reset = await c.post(id, 'rdns', { _csrf: first.csrf, ip, ptr: '' });
    assert.equal(reset.statusCode, 303);
    const back = await c.flash(reset, id);
    assert.match(back, /is the default again/);
    assert.ok(back.includes(`<td class="mono">${ip}</td><td class="mono">${byDefault}</td>`));
  });
});

test('console: without a DNS server the service page says reverse DNS is not configured', async () => {
  const t = await createTestApp({}, { worker: true });
  try {
    const token = await t.token({ reseller: 'acme' });
    const c = await consoleOf(t);
    const id = await orderRunning(t, token, 'console-nordns.example.com');
    const { html } = await c.page(id);
    assert.match(html, /Reverse DNS is not configured on this server/);
    assert.doesNotMatch(html, /action="[^"]*\/rdns"/);
  } finally {
    await t.close();
  }
});
