import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { call, createTestApp, type TestApp } from '../helpers/app.ts';
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

/** The rows of the page's table, as their link texts (the services' domains). */
async function listedDomains(page: Page): Promise<string[]> {
  return page.locator('tbody tr td:first-child a').allInnerTexts();
}

describe('console: the services list searches, sorts and pages both ways', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let token: string;
  const order = async (domain: string, body: object = smallOrder(domain)) => {
    const res = await call(t, token, 'POST', 'service/create-order', { ...body, domain_name: domain }, B);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };

  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, {})]);
    origin = await listen(t);
    token = await t.token({ reseller: 'acme' });
    await createTestOperator(t, { name: 'alice', password: PASSWORD });
    // 55 services: more than the console's page of 50.
    for (let i = 0; i < 53; i++) await order(`n${String(i).padStart(2, '0')}.fleet.example.com`);
    await order('zeta.shop.example.com');
    await order('custom.shop.example.org', { ...smallOrder('x'), cpu: 2 });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const signIn = signedInPages('alice', PASSWORD);

  test('search by substring and by prefix, with how many match and product and plan names', async () => {
    const { page, problems } = await signIn(browser, origin);
    await page.goto(`${origin}${CONSOLE}/services`);
    assert.equal(await page.getByRole('status').filter({ hasText: '55 services' }).count(), 1);

    await page.getByLabel('Search').fill('shop.example');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=shop\.example/);
    assert.deepEqual((await listedDomains(page)).sort(), [
      'custom.shop.example.org',
      'zeta.shop.example.com',
    ]);
    assert.equal(await page.getByRole('status').filter({ hasText: '2 services' }).count(), 1);
    const table = page.getByRole('table', { name: 'Services found, newest first' });
    assert.match(await table.locator('tr', { hasText: 'zeta.shop' }).innerText(), /VPS Starter\s+Starter S/);
    assert.match(await table.locator('tr', { hasText: 'custom.shop' }).innerText(), /VPS Starter\s+custom/);

    // The same words, at the start of a name only: none starts with them.
    await page.getByLabel('Domain', { exact: true }).selectOption('prefix');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/match=prefix/);
    assert.equal(await page.getByText('No service matches.').count(), 1);
    await page.getByLabel('Search').fill('zeta');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=zeta/);
    assert.deepEqual(await listedDomains(page), ['zeta.shop.example.com']);
    // The product's name narrows the list to its services.
    await page.getByRole('link', { name: 'VPS Starter' }).click();
    await page.waitForURL(/product_id=/);
    assert.deepEqual(await listedDomains(page), ['zeta.shop.example.com']);
    assert.deepEqual(problems, []);
  });

  test('sorted by domain, the next page goes on and the previous one comes back', async () => {
    const { page, problems } = await signIn(browser, origin);
    await page.goto(`${origin}${CONSOLE}/services`);
    await page.getByLabel('Order').selectOption({ label: 'Domain, A to Z' });
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/sort=domain/);
    const first = await listedDomains(page);
    assert.equal(first.length, 50);
    assert.deepEqual(first, [...first].sort());
    assert.equal(first[0], 'custom.shop.example.org');
    assert.equal(await page.getByRole('link', { name: '← Previous page' }).count(), 0);

    // Ordered meanwhile: a name sorting into the first page, and one into the second.
    await order('a-late.example.com');
    await order('n49a.fleet.example.com');
    await page.getByRole('link', { name: 'Next page →' }).click();
    await page.waitForURL(/cursor=/);
    const second = await listedDomains(page);
    assert.deepEqual(second, [
      'n49.fleet.example.com',
      'n49a.fleet.example.com',
      'n50.fleet.example.com',
      'n51.fleet.example.com',
      'n52.fleet.example.com',
      'zeta.shop.example.com',
    ]);
    assert.equal(await page.getByRole('link', { name: 'Next page →' }).count(), 0);

    await page.getByRole('link', { name: '← Previous page' }).click();
    await page.waitForURL(/cursor=/);
    const back = await listedDomains(page);
    // The 50 just before n49, as the first page was; the one ordered before them is a page further back.
    assert.deepEqual(back, first);
    assert.equal(await page.getByRole('link', { name: '← Previous page' }).count(), 1);
    await page.getByRole('link', { name: '← Previous page' }).click();
    await page.waitForURL(/cursor=/);
    assert.deepEqual(await listedDomains(page), ['a-late.example.com']);
    assert.equal(await page.getByRole('link', { name: '← Previous page' }).count(), 0);
    assert.deepEqual(problems, []);
  });

  test('the product filter lists the catalogue’s products and keeps the other filters', async () => {
    // After the tests above, which count the services and page through them.
    await order('biz.example.net', {
      ...smallOrder('x', 20),
      product_id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b02',
      cpu: 2,
      ram: 4,
      hdd: 80,
    });
    const { page, problems } = await signIn(browser, origin);
    await page.goto(`${origin}${CONSOLE}/services`);
    const product = page.getByLabel('Product', { exact: true });
    assert.deepEqual(await product.locator('option').allInnerTexts(), [
      'Any product',
      'VPS Starter',
      'VPS Business',
      'Storage VPS',
    ]);
    await product.selectOption({ label: 'VPS Business' });
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/product_id=3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b02/);
    assert.deepEqual(await listedDomains(page), ['biz.example.net']);
    assert.equal(await page.getByRole('status').filter({ hasText: '1 service' }).count(), 1);

    // A search with the product kept: zeta is a VPS Starter, so none; then any product.
    await page.getByLabel('Search').fill('zeta');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=zeta/);
    assert.match(page.url(), /product_id=3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b02/);
    assert.equal(await page.getByText('No service matches.').count(), 1);
    await product.selectOption({ label: 'VPS Starter' });
    await page.getByLabel('Status').selectOption('pending');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/product_id=3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01/);
    assert.match(page.url(), /q=zeta.*status=pending|status=pending.*q=zeta/);
    assert.deepEqual(await listedDomains(page), ['zeta.shop.example.com']);
    assert.equal(await product.inputValue(), '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01');
    assert.deepEqual(problems, []);
  });
});
