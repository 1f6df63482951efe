import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import {
  CONSOLE,
  launchBrowser,
  listen,
  logIn,
  noBrowser,
  openPage,
  type TestBrowser,
} from '../helpers/browser.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';

describe('console: address pools', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let page: Page;
  let problems: string[];
  let ops: string;

  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, { worker: true })]);
    origin = await listen(t);
    const operator = await createTestOperator(t, { name: 'alice', password: PASSWORD });
    ops = await operatorToken(t, operator);
    ({ page, problems } = await openPage(browser, origin));
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/`);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('the list from the navigation; add a pool; a refusal shows the API’s message; remove it', async () => {
    await page.getByRole('link', { name: 'Address pools' }).click();
    await page.waitForURL(`${origin}${CONSOLE}/ip-pools`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Address pools');
    const rowOf = (name: string) =>
      page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
    assert.match(
      await rowOf('default').innerText(),
      /IPv4\s+10\.80\.0\.0\/24\s+10\.80\.0\.1\s+10\.80\.0\.2 – 10\.80\.0\.254/,
    );

    const form = page.getByRole('region', { name: 'Add an address pool' });
    const add = async (name: string, network: string) => {
      await form.getByLabel(/^Name \(1 to 63/).fill(name);
      await form.getByLabel('Family', { exact: true }).selectOption('ipv6');
      await form.getByLabel(/^Network/).fill(network);
      await form.getByLabel(/^Hosts it serves/).fill('sim-host-1');
      await page.getByRole('button', { name: 'Add pool' }).click();
      await page.getByRole('status').or(page.getByRole('alert')).first().waitFor();
    };
    await add('v6', '2001:db8:4000::/48');
    assert.equal(await page.getByRole('status').innerText(), 'Address pool v6 added.');
    assert.match(
      await rowOf('v6').innerText(),
      /IPv6\s+2001:db8:4000::\/48\s+fe80::1\s+\/64 per server\s+sim-host-1/,
    );
    const api = (await opsCall(t, ops, 'GET', 'ip-pools')).body.data;
    assert.deepEqual(
      api.map((p: { name: string }) => p.name),
      ['default', 'v6'],
    );

    await add('v6b', '2001:db8:4000:8000::/49');
    assert.match(await page.getByRole('alert').innerText(), /overlaps pool v6/);

    // An IPv4 range with its gateway, range and reserved addresses; an IPv6 pool with its size.
    await form.getByLabel(/^Name \(1 to 63/).fill('rack-2');
    await form.getByLabel('Family', { exact: true }).selectOption('ipv4');
    await form.getByLabel(/^Network/).fill('198.51.100.0/28');
    await form.getByLabel(/^Gateway/).fill('198.51.100.14');
    await form.getByLabel(/^First address/).fill('198.51.100.2');
    await form.getByLabel(/^Last address/).fill('198.51.100.13');
    await form.getByLabel(/^Reserved addresses/).fill(' 198.51.100.3, 198.51.100.4 ,');
    await page.getByRole('button', { name: 'Add pool' }).click();
    await page.getByRole('status').waitFor();
    assert.match(
      await rowOf('rack-2').innerText(),
      /IPv4\s+198\.51\.100\.0\/28\s+198\.51\.100\.14\s+198\.51\.100\.2 – 198\.51\.100\.13\s+reserved 198\.51\.100\.3, 198\.51\.100\.4\s+hosts no IPv4 pool names/,
    );
    await form.getByLabel(/^Name \(1 to 63/).fill('v6-62');
    await form.getByLabel('Family', { exact: true }).selectOption('ipv6');
    await form.getByLabel(/^Network/).fill('2001:db8:7700::/56');
    await form.getByLabel(/^Prefix length per server/).fill('62');
    await page.getByRole('button', { name: 'Add pool' }).click();
    await page.getByRole('status').waitFor();
    assert.match(await rowOf('v6-62').innerText(), /\/62 per server\s+hosts no IPv6 pool names/);

    page.once('dialog', (d) => void d.accept());
    await rowOf('v6').getByRole('button', { name: 'Remove v6' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Address pool removed.');
    assert.equal(await rowOf('v6').count(), 0);
    assert.deepEqual(problems, []);
  });
});
