import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { BASE, call, createTestApp, type TestApp } from '../helpers/app.ts';
import {
  CONSOLE,
  launchBrowser,
  listen,
  logIn,
  noBrowser,
  openPage,
  type TestBrowser,
} from '../helpers/browser.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';

describe('console: resellers', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let acmeClient: RegisteredApplication;
  // One login for the file (the password hash is slow on purpose); every test goes on in its page.
  let page: Page;
  let problems: string[];

  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp()]);
    origin = await listen(t);
    await createTestOperator(t, { name: 'alice', password: PASSWORD });
    acmeClient = await t.client({ reseller: 'acme' });
    const acme = await t.token({ client: acmeClient });
    // An order counts against the quota from the start (no worker needed).
    const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('used.example.com'), {
      'x-envelope-variant': 'B',
    });
    assert.equal(order.status, 200, JSON.stringify(order.body));
    ({ page, problems } = await openPage(browser, origin));
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/`);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** Whether acme's application gets a token now. */
  async function acmeGetsToken(): Promise<boolean> {
    const res = await t.app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token`,
      payload: {
        grant_type: 'client_credentials',
        client_id: acmeClient.client_id,
        client_secret: acmeClient.client_secret,
      },
    });
    return res.statusCode === 200;
  }

  test('the list pages through resellers; the form creates one, and refuses a name in use with the API’s message', async () => {
    await page.goto(`${origin}${CONSOLE}/`);
    await page.getByRole('link', { name: 'Resellers', exact: true }).click();
    await page.waitForURL(`${origin}${CONSOLE}/resellers`);
    const list = page.getByRole('table', { name: 'Resellers, by name' });
    assert.equal(await list.getByRole('link', { name: 'acme' }).count(), 1);

    await page.getByLabel('Name of the new reseller').fill('globex');
    await page.getByRole('button', { name: 'Create reseller' }).click();
    await page.getByRole('heading', { level: 1, name: 'Reseller globex' }).waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Reseller "globex" created.');
    assert.equal(await page.getByRole('table').count(), 0);
    assert.match(await page.locator('main').innerText(), /No applications yet/);

    await page.goto(`${origin}${CONSOLE}/resellers`);
    await page.getByLabel('Name of the new reseller').fill('globex');
    await page.getByRole('button', { name: 'Create reseller' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('alert').innerText(), 'A reseller named "globex" exists already');
    assert.equal(page.url(), `${origin}${CONSOLE}/resellers`);

    // More resellers than a page: the next page link goes on where the first page stopped.
    for (let i = 0; i < 50; i++) await t.client({ reseller: `zz-${String(i).padStart(2, '0')}` });
    await page.goto(`${origin}${CONSOLE}/resellers`);
    const first = await list.getByRole('link').allInnerTexts();
    assert.equal(first.length, 50);
    await page.getByRole('link', { name: 'Next page →' }).click();
    await page.waitForURL(/cursor=/);
    const second = await list.getByRole('link').allInnerTexts();
    assert.deepEqual([...first, ...second].sort(), [
      'acme',
      'globex',
      ...Array.from({ length: 50 }, (_, i) => `zz-${String(i).padStart(2, '0')}`),
    ]);
    assert.equal(await page.getByRole('link', { name: 'Next page →' }).count(), 0);
    assert.deepEqual(problems, []);
  });

  test('a reseller’s page: applications, use against the quota; the quota form sets and lifts caps and shows the API’s refusal', async () => {
    await page.goto(`${origin}${CONSOLE}/resellers`);
    await page.getByRole('link', { name: 'acme', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Reseller acme' }).waitFor();
    const apps = page.getByRole('table', { name: 'Applications of acme' });
    assert.match(await apps.innerText(), new RegExp(acmeClient.client_id));
    const use = page.getByRole('region', { name: 'Use against the quota' });
    assert.match(await use.innerText(), /1 service in use, no limit/);
    assert.match(await use.innerText(), /1 vCore in use, no limit/);
    for (const label of [
      'Services (services)',
      'CPU (vCores)',
      'RAM (GB)',
      'Disk (GB)',
      'IP addresses (addresses)',
      'Backup (GB)',
    ]) {
      assert.equal(await page.getByLabel(label).inputValue(), '', `${label} is empty: unlimited`);
    }

    await page.getByLabel('CPU (vCores)').fill('4');
    await page.getByLabel('Services (services)').fill('10');
    await page.getByRole('button', { name: 'Save quota' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Quota saved.');
    assert.equal(await page.getByLabel('CPU (vCores)').inputValue(), '4');
    assert.equal(await page.getByLabel('Services (services)').inputValue(), '10');
    assert.match(await use.innerText(), /1 \/ 4 vCores \(25%\)/);
    assert.match(await use.innerText(), /1 \/ 10 services \(10%\)/);
    assert.equal(await use.getByRole('meter', { name: 'CPU used' }).getAttribute('value'), '1');

    // A value the API refuses: its message, and the quota as it was.
    await page.getByLabel('CPU (vCores)').fill('1000000000');
    await page.getByRole('button', { name: 'Save quota' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('alert').innerText(), 'cpu must be <= 999999999');
    assert.equal(await page.getByLabel('CPU (vCores)').inputValue(), '4');

    // Emptied: unlimited again.
    await page.getByLabel('CPU (vCores)').fill('');
    await page.getByLabel('Services (services)').fill('');
    await page.getByRole('button', { name: 'Save quota' }).click();
    await page.getByRole('status').waitFor();
    assert.match(await use.innerText(), /1 vCore in use, no limit/);
    assert.equal(await page.getByLabel('CPU (vCores)').inputValue(), '');
    assert.deepEqual(problems, []);
  });

  test('disable asks first, then the reseller’s applications get no token; enable lets them in again', async () => {
    await page.goto(`${origin}${CONSOLE}/resellers`);
    await page.getByRole('link', { name: 'acme', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Reseller acme' }).waitFor();

    // Said no to: nothing happens.
    const questions: string[] = [];
    page.once('dialog', (d) => {
      questions.push(d.message());
      void d.dismiss();
    });
    await page.getByRole('button', { name: 'Disable reseller' }).click();
    assert.equal(questions.length, 1);
    assert.match(questions[0]!, /^Disable acme\?/);
    assert.equal(await page.getByRole('button', { name: 'Disable reseller' }).count(), 1);
    assert.equal(await acmeGetsToken(), true);

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Disable reseller' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Reseller "acme" disabled.');
    assert.match(await page.locator('dl.facts').innerText(), /disabled/);
    assert.equal(await acmeGetsToken(), false);

    await page.getByRole('button', { name: 'Enable reseller' }).click();
    await page.getByRole('button', { name: 'Disable reseller' }).waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Reseller "acme" enabled.');
    assert.equal(await acmeGetsToken(), true);
    assert.deepEqual(problems, []);
  });

  test('an unknown reseller is a 404 page with the API’s message', async () => {
    const res = await page.goto(`${origin}${CONSOLE}/resellers/00000000-0000-4000-8000-000000000000`);
    assert.equal(res?.status(), 404);
    assert.equal(await page.getByRole('alert').innerText(), 'Reseller not found');
    // The browser logs the 404 answer itself; nothing else may appear.
    assert.deepEqual(
      problems.filter((p) => !/status of 404/.test(p)),
      [],
    );
    problems.length = 0;
  });
});
