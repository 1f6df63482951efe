/**
 * The console's notifications page: the recent notifications with a filter by kind, and the
 * operators' webhooks: added with the secret shown once, listed without it, removed; a support
 * operator reads the page without its forms.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { queueNotification } from '../../src/store/repos/notifications.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import {
  CONSOLE,
  launchBrowser,
  listen,
  noBrowser,
  signedInPages,
  type TestBrowser,
} from '../helpers/browser.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';
/** A receiver on loopback (the app allows private addresses here); nothing is sent to it. */
const HOOK = 'http://127.0.0.1:8080/vrp-hook';

/** The rows of the notifications table, as their cells' texts. */
async function notificationRows(page: Page): Promise<string[][]> {
  const rows = page.getByRole('table', { name: /^Notifications/ }).locator('tbody tr');
  const out: string[][] = [];
  for (const row of await rows.all()) out.push((await row.locator('td').allInnerTexts()).slice(1, 3));
  return out;
}

describe('console: notifications and operator webhooks', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let ops: string;

  before(async () => {
    [browser, t] = await openTogether([
      launchBrowser(),
      createTestApp({ VRP_WEBHOOK_ALLOW_PRIVATE: '1' }, {}),
    ]);
    origin = await listen(t);
    const [admin] = await Promise.all([
      createTestOperator(t, { name: 'alice', password: PASSWORD }),
      createTestOperator(t, { name: 'helpdesk', password: PASSWORD, role: 'support' }),
    ]);
    ops = await operatorToken(t, admin);
    const now = Date.now();
    await queueNotification(
      t.ctx.store.db,
      { kind: 'job.failed', subject: 'job-1', summary: 'Job create of a.example.com failed', data: {} },
      now - 60_000,
    );
    await queueNotification(
      t.ctx.store.db,
      { kind: 'host.unreachable', subject: 'sim-host-1', summary: 'Host sim-host-1 unreachable', data: {} },
      now,
    );
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const asAdmin = signedInPages('alice', PASSWORD);
  const asSupport = signedInPages('helpdesk', PASSWORD);

  test('the notifications newest first, filtered by kind; an unknown kind shows the API’s refusal', async () => {
    const { page, problems } = await asAdmin(browser, origin);
    await page.getByRole('link', { name: 'Notifications', exact: true }).click();
    await page.waitForURL(`${origin}${CONSOLE}/notifications`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Notifications');
    assert.deepEqual(await notificationRows(page), [
      ['host.unreachable', 'Host sim-host-1 unreachable'],
      ['job.failed', 'Job create of a.example.com failed'],
    ]);

    await page.getByLabel('Kind').selectOption('job.failed');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/kind=job\.failed/);
    assert.deepEqual(await notificationRows(page), [['job.failed', 'Job create of a.example.com failed']]);
    await page.getByLabel('Kind').selectOption('quota.near');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/kind=quota\.near/);
    assert.equal(await page.getByText('No notification of this kind.').count(), 1);
    assert.deepEqual(problems, []);

    const refused = await page.goto(`${origin}${CONSOLE}/notifications?kind=nope`);
    assert.equal(refused?.status(), 400);
    assert.match(await page.getByRole('alert').innerText(), /kind/);
  });

  test('add a webhook: its secret once on a no-store page, then listed without it; a refusal; remove it', async () => {
    const { page, problems } = await asAdmin(browser, origin);
    await page.goto(`${origin}${CONSOLE}/notifications`);
    assert.equal(await page.getByText('No operator webhooks.').count(), 1);

    await page.getByLabel('Webhook URL').fill(HOOK);
    const [answer] = await Promise.all([
      page.waitForResponse(
        (r) => r.request().method() === 'POST' && r.url().endsWith('/notifications/webhooks'),
      ),
      page.getByRole('button', { name: 'Add webhook' }).click(),
    ]);
    assert.equal(answer.status(), 200);
    assert.equal(answer.headers()['cache-control'], 'no-store');
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Operator webhook added');
    assert.equal(await page.locator('#webhook-url').innerText(), HOOK);
    const secret = await page.locator('#webhook-secret').innerText();
    assert.match(secret, /^whsec_/);
    const api = (await opsCall(t, ops, 'GET', 'webhooks')).body.data;
    assert.deepEqual(
      api.map((w: { url: string }) => w.url),
      [HOOK],
    );

    await page.getByRole('link', { name: '← Back to the notifications' }).click();
    await page.waitForURL(`${origin}${CONSOLE}/notifications`);
    const row = page.getByRole('table', { name: 'Operator webhooks' }).getByRole('row', { name: HOOK });
    assert.match(await row.innerText(), /127\.0\.0\.1:8080\/vrp-hook/);
    assert.ok(!(await page.content()).includes(secret), 'the secret is not shown again');

    await page.getByLabel('Webhook URL').fill('ftp://example.com/hook');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    assert.match(await page.getByRole('alert').innerText(), /must start with https:\/\/ or http:\/\//);

    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: `Remove ${HOOK}` }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Operator webhook removed.');
    assert.equal(await page.getByText('No operator webhooks.').count(), 1);
    assert.deepEqual((await opsCall(t, ops, 'GET', 'webhooks')).body.data, []);
    assert.deepEqual(problems, []);
  });

  test('support: the notifications and the webhooks, but no form to add or remove one', async () => {
    const created = await opsCall(t, ops, 'POST', 'webhooks', { url: HOOK });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const { page, problems } = await asSupport(browser, origin);
    await page.goto(`${origin}${CONSOLE}/notifications`);
    assert.equal((await notificationRows(page)).length, 2);
    const hooks = page.getByRole('table', { name: 'Operator webhooks' });
    assert.equal(await hooks.getByRole('row', { name: HOOK }).count(), 1);
    assert.equal(await page.locator('main form[method="post"]').count(), 0);
    assert.equal(await page.getByLabel('Webhook URL').count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Remove/ }).count(), 0);
    assert.ok(!(await page.content()).includes(created.body.data.secret));
    assert.deepEqual(problems, []);
  });
});
