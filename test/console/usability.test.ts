/**
 * The console as people use it: the keyboard, a phone, their own time zone, and a form whose
 * CSRF token is missing. On the overview, with a failed job to show (an order no host has room for).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import {
  CONSOLE,
  launchBrowser,
  listen,
  noBrowser,
  signedInPages,
  type TestBrowser,
} from '../helpers/browser.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator } from '../helpers/operator.ts';

const PASSWORD = 'usability tests password';

describe('console usability', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  const signIn = signedInPages('erin', PASSWORD);
  before(async () => {
    // One small host: a 4-vCPU order finds no room, and its create job fails.
    [browser, t] = await openTogether([
      launchBrowser(),
      createTestApp({ VRP_SIM_HOSTS: 'tiny-host:2:2:100:50' }, { worker: true }),
    ]);
    origin = await listen(t);
    await createTestOperator(t, { name: 'erin', password: PASSWORD });
    const token = await t.token();
    const order = await call(
      t,
      token,
      'POST',
      'service/create-order',
      { ...smallOrder('big.example'), cpu: 4 },
      {
        'x-envelope-variant': 'B',
      },
    );
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const id = order.body.data[0].service_id as string;
    assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
    await waitForStatus(t, token, id, 'failed');
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('times are shown in the browser’s zone, with the UTC time on hover', async () => {
    const { page, problems } = await signIn(browser, origin, { timezoneId: 'America/New_York' });
    await page.goto(`${origin}${CONSOLE}/`);
    const time = page.locator('time[data-local]').first();
    await time.waitFor();
    const iso = await time.getAttribute('datetime');
    assert.ok(iso);
    assert.match(await time.innerText(), /GMT-5|EST|GMT-4|EDT/);
    assert.equal(await time.getAttribute('title'), iso);
    const hour = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', timeZone: 'America/New_York' }).format(
      new Date(iso),
    );
    assert.ok(
      (await time.innerText()).includes(`${hour}:`),
      `${await time.innerText()} shows the hour ${hour}`,
    );
    assert.deepEqual(problems, []);
  });

  test('the keyboard reaches everything: a skip link first, then the navigation', async () => {
    const { page, problems } = await signIn(browser, origin);
    await page.goto(`${origin}${CONSOLE}/`);
    await page.keyboard.press('Tab');
    assert.equal(await page.locator(':focus').innerText(), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await page.locator(':focus').getAttribute('id'), 'main');
    // From the top again: the brand, then the navigation's first link.
    await page.goto(`${origin}${CONSOLE}/`);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await page.locator(':focus').innerText(), 'Overview');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/services/);
    assert.deepEqual(problems, []);
  });

  test('on a phone the page fits its width (tables scroll inside their box)', async () => {
    const { page, problems } = await signIn(browser, origin, { viewport: { width: 390, height: 844 } });
    await page.goto(`${origin}${CONSOLE}/`);
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    assert.ok(width <= 390, `the page is ${width} px wide`);
    assert.ok(await page.getByRole('table', { name: /Failed jobs/ }).isVisible());
    assert.deepEqual(problems, []);
  });

  test('a form sent without its CSRF token is refused and changes nothing', async () => {
    const { page, problems } = await signIn(browser, origin);
    await page.goto(`${origin}${CONSOLE}/`);
    // As a forged form would be: the logout form without its token.
    await page.locator('form.logout input[name="_csrf"]').evaluate((input) => input.remove());
    await page.getByRole('button', { name: 'Log out' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Refused');
    assert.match(await page.getByRole('alert').innerText(), /did not come from the console/);
    // Still logged in.
    await page.goto(`${origin}${CONSOLE}/`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Overview');
    assert.deepEqual(
      problems.filter((p) => !/status of 403/.test(p)),
      [],
    );
  });
});
