import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
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
import { createTestOperator } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';

describe('console login', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp()]);
    origin = await listen(t);
    await createTestOperator(t, { name: 'alice', password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('a page asks for a login first, then shows the overview; logout ends the session', async () => {
    const { page, problems } = await openPage(browser, origin);
    await page.goto(`${origin}${CONSOLE}/?from=bookmark`);
    assert.match(page.url(), /\/console\/login\?next=/);
    await page.getByLabel('Operator name').fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    // Back where it was going.
    await page.waitForURL(`${origin}${CONSOLE}/?from=bookmark`);
    await assertHeading(page, 'Overview');
    assert.equal(await page.getByRole('link', { name: 'Overview' }).getAttribute('aria-current'), 'page');
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'vrp_console');
    assert.ok(session, 'a session cookie');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(session.path, CONSOLE);

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${origin}${CONSOLE}/login`);
    assert.match(await page.getByRole('status').innerText(), /logged out/);
    await page.goto(`${origin}${CONSOLE}/`);
    assert.match(page.url(), /\/console\/login/);
    assert.deepEqual(problems, []);
  });

  test('a wrong password shows an error and nothing else', async () => {
    const { page, problems } = await openPage(browser, origin);
    await logIn(page, origin, 'alice', 'not the password at all');
    assert.equal(await page.getByRole('alert').innerText(), 'Wrong operator name or password.');
    assert.equal(await page.getByRole('navigation', { name: 'Console' }).count(), 0);
    // An unknown name answers the same.
    await logIn(page, origin, 'mallory', PASSWORD);
    assert.equal(await page.getByRole('alert').innerText(), 'Wrong operator name or password.');
    // Browsers log the 401 answer itself as a console error; nothing else may appear.
    assert.deepEqual(
      problems.filter((p) => !/status of 401/.test(p)),
      [],
    );
  });

  test('every page forbids loading anything from elsewhere', async () => {
    const res = await fetch(`${origin}${CONSOLE}/login`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('cache-control'), 'no-store');
  });
});

async function assertHeading(page: import('playwright-core').Page, name: string) {
  assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), name);
}
