import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { BASE, createTestApp, type TestApp } from '../helpers/app.ts';
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
const STARTER = '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01';

describe('console: catalogue and applications', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let page: Page;
  let support: Page;
  let problems: string[];
  let ops: string;
  let reseller: string;

  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({})]);
    origin = await listen(t);
    ops = await operatorToken(t, await createTestOperator(t, { name: 'alice', password: PASSWORD }));
    await createTestOperator(t, { name: 'sam', password: PASSWORD, role: 'support' });
    reseller = (await opsCall(t, ops, 'POST', 'resellers', { name: 'Blue' })).body.data.reseller_id;
    ({ page, problems } = await openPage(browser, origin));
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/`);
    ({ page: support } = await openPage(browser, origin));
    await logIn(support, origin, 'sam', PASSWORD);
    await support.waitForURL(`${origin}${CONSOLE}/`);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const message = async (p: Page) => p.getByRole('status').or(p.getByRole('alert')).first().innerText();

  test('the catalogue: add a template and a product with its bounds, a plan; a refusal shows the rule; retire', async () => {
    await page.getByRole('link', { name: 'Catalogue' }).click();
    await page.waitForURL(`${origin}${CONSOLE}/catalog`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Catalogue');
    assert.ok(await page.getByRole('heading', { name: /VPS Starter/ }).isVisible());

    await page.getByText('Add an OS template').click();
    await page.getByLabel('Name', { exact: true }).last().fill('FreeBSD 14');
    await page.getByRole('button', { name: 'Add OS template' }).click();
    assert.equal(await message(page), 'OS template FreeBSD 14 added.');

    const form = page.getByRole('region', { name: 'Add a product' });
    await form.getByLabel('Name', { exact: true }).fill('Tiny VPS');
    const bounds: Record<string, [string, string]> = {
      ram: ['1', '2'],
      ip: ['1', '1'],
      cpu: ['2', '1'],
      hdd: ['10', '40'],
      backup: ['0', '20'],
    };
    for (const [r, [min, max]] of Object.entries(bounds)) {
      await form.locator(`input[name="${r}_min"]`).fill(min);
      await form.locator(`input[name="${r}_max"]`).fill(max);
    }
    await form.getByLabel('FreeBSD 14').check();
    await form.getByRole('button', { name: 'Add product' }).click();
    assert.match(await message(page), /config\.cpu\.max must be >= min/);
    const names = async () =>
      ((await opsCall(t, ops, 'GET', 'products')).body.data as any[]).map((p) => p.name);
    assert.ok(!(await names()).includes('Tiny VPS'), 'nothing added');

    const again = page.getByRole('region', { name: 'Add a product' });
    await again.getByLabel('Name', { exact: true }).fill('Tiny VPS');
    for (const [r, [min, max]] of Object.entries<[string, string]>({ ...bounds, cpu: ['1', '2'] })) {
      await again.locator(`input[name="${r}_min"]`).fill(min);
      await again.locator(`input[name="${r}_max"]`).fill(max);
    }
    await again.getByLabel('FreeBSD 14').check();
    await again.getByRole('button', { name: 'Add product' }).click();
    assert.equal(await message(page), 'Product Tiny VPS added.');
    const tiny = ((await opsCall(t, ops, 'GET', 'products')).body.data as any[]).find(
      (p) => p.name === 'Tiny VPS',
    );
    assert.deepEqual(tiny.config.cpu, { min: 1, max: 2 });

    const section = page.getByRole('region', { name: /Tiny VPS/ });
    await section.getByText('Add a plan to Tiny VPS').click();
    const planFields: [string, string][] = [
      ['Name', 'Tiny S'],
      ['CPU (vCores)', '1'],
      ['RAM (GB)', '1'],
      ['Disk (GB)', '10'],
      ['Price', '2.5'],
    ];
    for (const [label, value] of planFields) {
      await section.getByLabel(label, { exact: true }).last().fill(value);
    }
    await section.getByRole('button', { name: 'Add plan' }).click();
    assert.equal(await message(page), 'Plan Tiny S added.');
    assert.ok(await page.getByRole('rowheader', { name: 'Tiny S' }).isVisible());

    // Retiring is undone by a click: it asks nothing.
    await page.getByRole('button', { name: 'Retire product VPS Starter' }).click();
    assert.equal(await message(page), 'Product retired.');
    const starter = ((await opsCall(t, ops, 'GET', 'products')).body.data as any[]).find(
      (p) => p.id === STARTER,
    );
    assert.equal(starter.retired, true);
    assert.ok(await page.getByRole('button', { name: 'Offer again product VPS Starter' }).isVisible());
    assert.deepEqual(problems, []);
  });

  test('support sees the catalogue and the applications, without a form or a button to change them', async () => {
    await support.goto(`${origin}${CONSOLE}/catalog`);
    assert.ok(await support.getByRole('heading', { name: /VPS Starter/ }).isVisible());
    assert.equal(
      await support
        .getByRole('button')
        .filter({ hasText: /Retire|Remove|Add/ })
        .count(),
      0,
    );
    assert.equal(await support.locator('main form').count(), 0, 'no form but the logout');
    await support.goto(`${origin}${CONSOLE}/resellers/${reseller}`);
    assert.ok(await support.getByRole('heading', { name: 'Applications' }).isVisible());
    assert.equal(await support.getByText('Register an application').count(), 0);
    assert.equal(await support.locator('main form').count(), 0);
  });

  test('applications: register one (the secret shown once), rotate, disable', async () => {
    await page.goto(`${origin}${CONSOLE}/resellers/${reseller}`);
    await page.getByText('Register an application').click();
    await page.getByLabel('Name (optional)').fill('Portal');
    await page.getByRole('checkbox', { name: 'service', exact: true }).uncheck();
    await page.getByRole('button', { name: 'Register application' }).click();
    const clientId = await page.locator('#client-id').innerText();
    const secret = await page.locator('#client-secret').innerText();
    assert.match(clientId, /^vrp_/);
    const token = await t.app.inject({
      method: 'POST',
      url: `${BASE}/oauth/token`,
      payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
    });
    assert.equal(token.statusCode, 200, token.body);
    assert.equal(token.json().scope, 'access products');

    await page.getByRole('link', { name: '← Back to the reseller' }).click();
    assert.ok(!(await page.content()).includes(secret), 'the secret is not shown again');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'New secret Portal' }).click();
    const rotated = await page.locator('#client-secret').innerText();
    assert.notEqual(rotated, secret);
    await page.getByRole('link', { name: '← Back to the reseller' }).click();
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Disable Portal' }).click();
    assert.equal(await message(page), 'Application Portal disabled.');
    const apps = (await opsCall(t, ops, 'GET', `resellers/${reseller}/applications`)).body.data;
    assert.equal(apps[0].enabled, false);
    assert.deepEqual(problems, []);
  });
});
