/**
 * A service's console in a real browser: the link's page renders the serial console with
 * xterm.js over its WebSocket, and what is typed reaches the server's shell.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, orderRunning, type TestApp } from '../helpers/app.ts';
import { launchBrowser, listen, noBrowser, openPage, type TestBrowser } from '../helpers/browser.ts';
import { openTogether } from '../helpers/open-together.ts';

describe('a service’s console in the browser', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, { worker: true })]);
    origin = await listen(t);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('the page shows the login prompt; root, the password and `hostname` answer the host name', async () => {
    const token = await t.token();
    const id = await orderRunning(t, token, 'browser.example.com');
    const b = { 'x-envelope-variant': 'B' };
    const password = (await call(t, token, 'GET', `service/${id}/details`, undefined, b)).body.data.password;
    const link = await call(t, token, 'POST', `service/${id}/console`, undefined, b);
    assert.equal(link.status, 200, JSON.stringify(link.body));
    // The link names the host the request reached; the browser opens it on the test's origin.
    const url = new URL(link.body.data.url);

    const { page, problems } = await openPage(browser, origin);
    await page.goto(`${origin}${url.pathname}`);
    const screen = page.locator('.xterm-rows');
    await screen.getByText('browser.example.com login:').waitFor();
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.type('root');
    await page.keyboard.press('Enter');
    await screen.getByText('Password:').waitFor();
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await screen.getByText('root@browser.example.com:~#').first().waitFor();
    await page.keyboard.type('hostname');
    await page.keyboard.press('Enter');
    await screen.getByText('root@browser.example.com:~#').nth(1).waitFor();
    const lines = (await screen.locator(':scope > div').allTextContents()).map((l) => l.trimEnd());
    assert.ok(lines.includes('browser.example.com'), lines.join('\n'));
    assert.ok(!lines.join('\n').includes(password), 'the password is not echoed');
    await assert.doesNotReject(page.getByRole('status').filter({ hasText: 'Connected' }).waitFor());
    assert.deepEqual(problems, []);
  });
});
