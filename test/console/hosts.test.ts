import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
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
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';
const B = { 'x-envelope-variant': 'B' };

describe('console: hosts', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let page: Page;
  let problems: string[];
  let ops: string;
  let host: string;
  let service: string;

  before(async () => {
    [browser, t] = await openTogether([
      launchBrowser(),
      createTestApp({ VRP_SIM_HOSTS: 'sim-a:64:256:2000:500,sim-b:32:128:1000' }, { worker: true }),
    ]);
    origin = await listen(t);
    const operator = await createTestOperator(t, { name: 'alice', password: PASSWORD });
    ops = await operatorToken(t, operator);
    // One running server, so that a host shows some use.
    const acme = await t.token({ reseller: 'acme' });
    const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('host.example.com'), B);
    service = order.body.data[0].service_id;
    await opsCall(t, ops, 'POST', `services/${service}/create`);
    await waitForStatus(t, acme, service, 'running');
    const hosts = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items;
    host = hosts.find((h: { services: number }) => h.services === 1).host_id;
    ({ page, problems } = await openPage(browser, origin));
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/`);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const card = (id: string) => page.locator(`#host-${id}`);

  test('each host: its state, use bars, servers; the overview links to it', async () => {
    await page.goto(`${origin}${CONSOLE}/`);
    await page.getByRole('link', { name: host, exact: true }).click();
    await page.waitForURL(`${origin}${CONSOLE}/hosts#host-${host}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Hosts');
    assert.equal(await card(host).getByRole('heading').innerText(), `${host} active`);
    const text = await card(host).innerText();
    assert.match(text, /1 server on it/);
    assert.match(text, /CPU\s+1 \/ (64|32) vCores/);
    assert.match(text, /RAM\s+1 \/ (256|128) GB/);
    assert.match(text, /Disk\s+20 \/ (2000|1000) GB/);
    assert.equal(await card(host).getByRole('meter', { name: 'Disk used' }).getAttribute('value'), '20');
    // Backup storage only where the host has some.
    assert.equal(await card('sim-a').getByRole('meter', { name: 'Backup used' }).count(), 1);
    assert.equal(await card('sim-b').getByRole('meter', { name: 'Backup used' }).count(), 0);
    const other = host === 'sim-a' ? 'sim-b' : 'sim-a';
    assert.match(await card(other).innerText(), /0 servers on it/);
    assert.deepEqual(problems, []);
  });

  test('drain asks first, then the host is draining (and the API says so); activate makes it active again', async () => {
    await page.goto(`${origin}${CONSOLE}/hosts`);
    const questions: string[] = [];
    page.once('dialog', (d) => {
      questions.push(d.message());
      void d.dismiss();
    });
    await card('sim-b').getByRole('button', { name: 'Drain sim-b' }).click();
    assert.match(questions[0] ?? '', /^Drain sim-b\?/);
    assert.equal(await card('sim-b').getByRole('heading').innerText(), 'sim-b active');

    page.once('dialog', (d) => void d.accept());
    await card('sim-b').getByRole('button', { name: 'Drain sim-b' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(
      await page.getByRole('status').innerText(),
      'Host sim-b is draining: no new server is placed on it.',
    );
    assert.equal(await card('sim-b').getByRole('heading').innerText(), 'sim-b draining');
    assert.equal(await card('sim-a').getByRole('heading').innerText(), 'sim-a active');
    const hosts = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items;
    assert.deepEqual(
      hosts.map((h: { host_id: string; state: string }) => [h.host_id, h.state]),
      [
        ['sim-a', 'active'],
        ['sim-b', 'draining'],
      ],
    );

    await card('sim-b').getByRole('button', { name: 'Activate sim-b' }).click();
    await card('sim-b').getByRole('button', { name: 'Drain sim-b' }).waitFor();
    assert.equal(
      await page.getByRole('status').innerText(),
      'Host sim-b is active: new servers may be placed on it.',
    );
    assert.equal(await card('sim-b').getByRole('heading').innerText(), 'sim-b active');
    assert.deepEqual(problems, []);
  });

  test('add a host: the form adds it; a refusal shows the API’s message; edit, evacuate and remove it', async () => {
    await page.goto(`${origin}${CONSOLE}/hosts`);
    const add = async (name: string) => {
      const form = page.getByRole('region', { name: 'Add a host' });
      await form.getByLabel(/^Name \(1 to 63/).fill(name);
      await form.getByLabel('vCores').fill('4');
      await form.getByLabel('RAM (GB)').fill('8');
      await form.getByLabel('Disk (GB)').fill('100');
      await page.getByRole('button', { name: 'Add host' }).click();
      await page.getByRole('status').or(page.locator('.flash-error, [role=alert]')).first().waitFor();
    };
    await add('sim-c');
    assert.equal(await page.getByRole('status').innerText(), 'Host sim-c added.');
    const listed = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items;
    const added = listed.find((h: { name: string }) => h.name === 'sim-c');
    assert.ok(added, JSON.stringify(listed));
    assert.equal(await card(added.host_id).getByRole('heading').innerText(), 'sim-c active');

    await add('sim-c');
    assert.match(await page.getByRole('alert').innerText(), /A host named "sim-c" exists already/);

    const c = card(added.host_id);
    await c.getByText('Edit sim-c').click();
    await c.getByLabel('vCores').fill('6');
    await c.getByRole('button', { name: 'Save sim-c' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Host sim-c saved.');
    assert.match(await card(added.host_id).innerText(), /CPU\s+0 \/ 6 vCores/);

    page.once('dialog', (d) => void d.accept());
    await card(added.host_id).getByRole('button', { name: 'Evacuate sim-c' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(
      await page.getByRole('status').innerText(),
      'Host sim-c is evacuating: its servers are being migrated to other hosts.',
    );
    // An empty host's evacuation may have ended already (the worker's evacuator is woken at once):
    // then it is draining, with the evacuation's counts all the same.
    assert.match(await card(added.host_id).getByRole('heading').innerText(), /^sim-c (evacuating|draining)$/);
    assert.match(
      await card(added.host_id).innerText(),
      /(Evacuation|Last evacuation) since .*: 0 moved, 0 failed, 0 moving, 0 left/,
    );

    // The host with a server cannot be removed: the API's message is shown.
    page.once('dialog', (d) => void d.accept());
    await card(host)
      .getByRole('button', { name: `Remove ${host}` })
      .click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /1 server is on this host/);

    page.once('dialog', (d) => void d.accept());
    await card(added.host_id).getByRole('button', { name: 'Remove sim-c' }).click();
    await page.getByRole('status').waitFor();
    assert.equal(await page.getByRole('status').innerText(), 'Host removed.');
    assert.equal(await card(added.host_id).count(), 0);
    assert.equal((await opsCall(t, ops, 'GET', `hosts/${added.host_id}`)).status, 404);
    assert.deepEqual(problems, []);
  });

  test('the service page’s Migrate form offers the other active hosts and queues the migration', async () => {
    await page.goto(`${origin}${CONSOLE}/services/${service}`);
    const select = page.getByLabel('Destination host');
    const options = await select.locator('option').allInnerTexts();
    const other = host === 'sim-a' ? 'sim-b' : 'sim-a';
    assert.deepEqual(options, ['any (the host with the most free RAM)', other]);
    await select.selectOption({ label: other });
    await page.getByRole('button', { name: 'Migrate', exact: true }).click();
    await page.getByRole('status').first().waitFor();
    assert.match(await page.getByRole('status').first().innerText(), /Migrate: queued/);
    const jobs = (await opsCall(t, ops, 'GET', `services/${service}`)).body.data.jobs;
    assert.equal(jobs[0].action, 'migrate');
    assert.deepEqual(problems, []);
  });

  test('a phone-wide window shows every host without scrolling sideways', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${origin}${CONSOLE}/hosts`);
    const wide = await page.locator('html').evaluate((root) => root.scrollWidth);
    assert.ok(wide <= 390, `page is ${wide} px wide`);
    await page.setViewportSize({ width: 1280, height: 800 });
    assert.deepEqual(problems, []);
  });
});
