import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setOperatorRoleByName } from '../../src/auth/operators.ts';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
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

const PASSWORD = 'correct horse battery staple';
const B = { 'x-envelope-variant': 'B' };

describe('console: what each role is shown', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let service: string;
  let helpdeskClient: string;
  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, { worker: true })]);
    origin = await listen(t);
    const acme = await t.token({ reseller: 'acme' });
    const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('roles.example.com'), B);
    assert.equal(order.status, 200, JSON.stringify(order.body));
    service = order.body.data[0].service_id;
    assert.equal((await call(t, acme, 'POST', `service/${service}/create`, undefined, B)).status, 200);
    await waitForStatus(t, acme, service, 'running');
    const [, helpdesk] = await Promise.all([
      createTestOperator(t, { name: 'root-ops', password: PASSWORD }),
      createTestOperator(t, { name: 'helpdesk', password: PASSWORD, role: 'support' }),
      createTestOperator(t, { name: 'accounts', password: PASSWORD, role: 'billing' }),
    ]);
    helpdeskClient = helpdesk.client_id;
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const asAdmin = signedInPages('root-ops', PASSWORD);
  const asSupport = signedInPages('helpdesk', PASSWORD);
  const asBilling = signedInPages('accounts', PASSWORD);
  const servicePage = () => `${origin}${CONSOLE}/services/${service}`;

  test('admin: the operations, and the password only after Reveal password, which is audited', async () => {
    const { page, problems } = await asAdmin(browser, origin);
    await page.goto(servicePage());
    await page.getByRole('heading', { level: 2, name: 'Operations' }).waitFor();
    assert.equal(await page.locator('.revealed-password').count(), 0, 'not shown before asked');
    await page.getByRole('link', { name: 'Reveal password' }).click();
    const shown = await page.locator('.revealed-password').innerText();
    assert.ok(shown.length >= 12, shown);
    const entries = await listAuditEntries(t.ctx.store.db, { serviceId: service, limit: 100 });
    assert.equal(entries.filter((e) => e.action === 'service.reveal_password').length, 1);
    assert.equal(await page.locator('.role').innerText(), 'admin');
    assert.deepEqual(problems, []);
  });

  test('billing: every page in the navigation, a service page without operations or reveal', async () => {
    const { page, problems } = await asBilling(browser, origin);
    await page.goto(servicePage());
    await page.getByRole('heading', { level: 2, name: 'Service' }).waitFor();
    const nav = await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allInnerTexts();
    assert.deepEqual(nav, [
      'Overview',
      'Services',
      'Jobs',
      'Resellers',
      'Hosts',
      'Address pools',
      'Catalogue',
      'Usage',
      'Audit',
      'Notifications',
      // The operator's own name: its two-factor login page.
      'accounts',
    ]);
    assert.equal(await page.getByRole('heading', { name: 'Operations' }).count(), 0);
    assert.equal(await page.getByRole('heading', { name: 'Migrate' }).count(), 0);
    assert.equal(await page.getByRole('button').count(), 1, 'only Log out');
    assert.equal(await page.getByRole('link', { name: 'Reveal password' }).count(), 0);
    // Asking for the password anyway shows no password.
    await page.goto(`${servicePage()}?reveal=true`);
    await page.getByRole('heading', { level: 2, name: 'Service' }).waitFor();
    assert.equal(await page.locator('.revealed-password').count(), 0);
    await page.goto(`${origin}${CONSOLE}/usage`);
    await page.getByRole('heading', { level: 1, name: 'Usage' }).waitFor();
    assert.deepEqual(problems, []);
  });

  test('hosts, pools and resellers: their forms for an admin only; the pages for every role', async () => {
    const forms = async (signIn: typeof asAdmin) => {
      const { page, problems } = await signIn(browser, origin);
      const counts: number[] = [];
      for (const [path, title] of [
        ['hosts', 'Hosts'],
        ['ip-pools', 'Address pools'],
        ['resellers', 'Resellers'],
        ['catalog', 'Catalogue'],
      ] as const) {
        await page.goto(`${origin}${CONSOLE}/${path}`);
        await page.getByRole('heading', { level: 1, name: title }).waitFor();
        // Every form but the logout one.
        counts.push(await page.locator('main form').count());
      }
      assert.deepEqual(problems, []);
      return counts;
    };
    const admin = await forms(asAdmin);
    assert.ok(
      admin.every((n) => n > 0),
      `admin: ${admin}`,
    );
    assert.deepEqual(await forms(asBilling), [0, 0, 0, 0]);
  });

  test('support: the operations but no reveal; a role taken away meanwhile shows the API’s refusal', async () => {
    const { page, problems } = await asSupport(browser, origin);
    await page.goto(servicePage());
    await page.getByRole('heading', { level: 2, name: 'Operations' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Reveal password' }).count(), 0);
    const stop = page.getByRole('button', { name: 'Stop' });
    await stop.waitFor();
    await setOperatorRoleByName(t.ctx.store.db, 'helpdesk', 'billing', Date.now());
    t.ctx.clientStates.invalidate(helpdeskClient);
    await stop.click();
    const alert = page.locator('.flash-error');
    await alert.waitFor();
    assert.match(await alert.innerText(), /needs the role admin or support; this operator is billing/);
    assert.equal(await page.getByRole('heading', { name: 'Operations' }).count(), 0, 'now shown as billing');
    assert.deepEqual(problems, []);
  });
});
