import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { findOperatorByName } from '../../src/store/repos/operators.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
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

describe('console: usage and audit', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let page: Page;
  let problems: string[];
  let ops: string;
  let operatorId: string;
  let acmeId: string;
  let service: string;

  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, { worker: true })]);
    origin = await listen(t);
    const operator = await createTestOperator(t, { name: 'alice', password: PASSWORD });
    operatorId = (await findOperatorByName(t.ctx.store.db, 'alice'))!.id;
    ops = await operatorToken(t, operator);
    const acme = await t.token({ reseller: 'acme' });
    acmeId = (await findResellerByName(t.ctx.store.db, 'acme'))!.id;
    await t.client({ reseller: 'quiet' });
    const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('usage.example.com'), B);
    service = order.body.data[0].service_id;
    await opsCall(t, ops, 'POST', `services/${service}/create`);
    await waitForStatus(t, acme, service, 'running');
    ({ page, problems } = await openPage(browser, origin));
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/`);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

  test('usage: the current month so far by default, a table per reseller and product, a chart, and the CSV as a download', async () => {
    // The month so far as of a moment: the page's is between the test's two readings of the
    // clock (a UTC midnight may fall between them).
    const monthSoFar = (now = new Date()) => ({
      from: day(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      to: day(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)),
    });
    const before = monthSoFar();
    await page.goto(`${origin}${CONSOLE}/`);
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.waitForURL(`${origin}${CONSOLE}/usage`);
    const shown = {
      from: await page.getByLabel('From (included, UTC)').inputValue(),
      to: await page.getByLabel('To (not included, UTC)').inputValue(),
    };
    const expected = [before, monthSoFar()];
    assert.ok(
      expected.some((x) => x.from === shown.from && x.to === shown.to),
      `the month so far: ${JSON.stringify(shown)} is one of ${JSON.stringify(expected)}`,
    );
    const { from, to } = shown;

    const report = page.getByRole('table', { name: 'Usage per reseller and product' });
    const rows = report.locator('tbody tr');
    assert.equal(await rows.count(), 1, 'one line: acme’s product (quiet ran nothing)');
    const cells = await rows.first().locator('td').allInnerTexts();
    assert.equal(cells[0], 'acme');
    assert.equal(cells[2], '1', 'one service');
    assert.ok(Number(cells[3]) > 0, `service hours: ${cells[3]}`);
    assert.equal(
      await rows.first().getByRole('link', { name: 'acme' }).getAttribute('href'),
      `${CONSOLE}/resellers/${acmeId}`,
    );

    const chart = page.locator('svg#usage-chart');
    assert.equal(await chart.getAttribute('role'), 'img');
    assert.equal(await chart.locator('title').textContent(), 'Service-hours per reseller');
    assert.match((await chart.locator('desc').textContent()) ?? '', /^acme: [\d.]+ service-hours/);
    assert.deepEqual(
      await chart
        .locator('text')
        .allTextContents()
        .then((x) => x.slice(0, 3)),
      ['Running', 'Suspended', 'acme'],
    );

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download CSV' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), `usage-${from}-${to}.csv`);
    const csv = (await readFile((await download.path())!, 'utf8')).trimEnd().split('\r\n');
    assert.equal(
      csv[0],
      'from,to,reseller_id,reseller_name,product_id,product_name,services,service_hours,cpu_hours,ram_gb_hours,hdd_gb_hours,ip_hours,backup_gb_hours,suspended_service_hours,suspended_cpu_hours,suspended_ram_gb_hours,suspended_hdd_gb_hours,suspended_ip_hours,suspended_backup_gb_hours,traffic_in_gb,traffic_out_gb',
    );
    assert.equal(csv.length, 2);
    const line = csv[1]!.split(',');
    assert.deepEqual(line.slice(0, 4), [`${from}T00:00:00.000Z`, `${to}T00:00:00.000Z`, acmeId, 'acme']);
    assert.equal(line[6], '1');
    assert.deepEqual(problems, []);
  });

  test('usage: a chosen period; one the API refuses shows its message and keeps the form', async () => {
    await page.goto(`${origin}${CONSOLE}/usage`);
    await page.getByLabel('From (included, UTC)').fill('2020-01-01');
    await page.getByLabel('To (not included, UTC)').fill('2020-02-01');
    await page.getByRole('button', { name: 'Show usage' }).click();
    await page.waitForURL(`${origin}${CONSOLE}/usage?from=2020-01-01&to=2020-02-01`);
    assert.match(await page.locator('main').innerText(), /No server ran in this period\./);
    assert.equal(await page.locator('svg#usage-chart').count(), 0);
    assert.equal(
      await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href'),
      `${CONSOLE}/usage.csv?from=2020-01-01&to=2020-02-01`,
    );

    await page.getByLabel('From (included, UTC)').fill('2020-03-01');
    await page.getByRole('button', { name: 'Show usage' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('alert').innerText(), 'to must be after from');
    assert.equal(await page.getByLabel('From (included, UTC)').inputValue(), '2020-03-01');
    assert.equal(await page.getByRole('link', { name: 'Download CSV' }).count(), 0);

    // The CSV link with a period the API refuses: its message, not a file.
    const res = await page.goto(`${origin}${CONSOLE}/usage.csv?from=2020-03-01&to=2020-02-01`);
    assert.equal(res?.status(), 400);
    assert.equal(await page.getByRole('alert').innerText(), 'to must be after from');
    assert.deepEqual(
      problems.filter((p) => !/status of 400/.test(p)),
      [],
    );
    problems.length = 0;
  });

  test('audit: the operator’s own changes in the console, with outcome and request id; filters by actor and service; a refused filter', async () => {
    // Changes made here, in the console.
    await page.goto(`${origin}${CONSOLE}/resellers`);
    await page.getByLabel('Name of the new reseller').fill('initech');
    await page.getByRole('button', { name: 'Create reseller' }).click();
    await page.getByRole('heading', { level: 1, name: 'Reseller initech' }).waitFor();
    await page.getByLabel('RAM (GB)').fill('-1');
    await page.getByRole('button', { name: 'Save quota' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('RAM (GB)').fill('64');
    await page.getByRole('button', { name: 'Save quota' }).click();
    await page.getByRole('status').waitFor();

    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('link', { name: 'My changes' }).click();
    await page.waitForURL(/actor=operator/);
    assert.equal(await page.getByLabel('Actor', { exact: true }).inputValue(), `operator:${operatorId}`);
    const table = page.getByRole('table', { name: 'Audit entries, newest first' });
    const rows = table.locator('tbody tr');
    // Actor, action, target, reason, outcome; the actor's cell: its name, then how and from where.
    const firstRows = async (n: number) =>
      Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const cells = (await rows.nth(i).locator('td').allInnerTexts()).slice(1, 6);
          return [cells[0]!.split('\n')[0], ...cells.slice(1)];
        }),
      );
    const initech = (await findResellerByName(t.ctx.store.db, 'initech'))!.id;
    assert.deepEqual(await firstRows(4), [
      ['operator alice (you)', 'reseller.quota', `reseller ${initech}`, '—', 'ok'],
      ['operator alice (you)', 'reseller.quota', `reseller ${initech}`, '—', 'refused validation_failed'],
      ['operator alice (you)', 'reseller.create', `reseller ${initech}`, '—', 'ok'],
      ['operator alice (you)', 'console.login', `operator ${operatorId}`, '—', 'ok'],
    ]);
    // Done in the console: through its session, from the browser's address.
    const session = await t.ctx.store.db
      .selectFrom('console_sessions')
      .select('id')
      .executeTakeFirstOrThrow();
    for (let i = 0; i < 4; i++) {
      const actor = await rows.nth(i).locator('td').nth(1).innerText();
      assert.match(actor, new RegExp(`\nconsole session ${session.id.slice(0, 12)}\nfrom 127\\.0\\.0\\.1$`));
      assert.match(await rows.nth(i).locator('td').nth(6).innerText(), /\S{8,}/, 'a request id');
    }
    // Every entry listed is the operator's own.
    for (const actor of await rows.locator('td:nth-child(2)').allInnerTexts())
      assert.match(actor.split('\n')[0]!, /\(you\)$/);

    // By actor: the applications' entries only; a service's entry links to its page.
    await page.getByLabel('Actor', { exact: true }).fill('application');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/actor=application/);
    const [actor, ...rest] = (await firstRows(1))[0]!;
    assert.equal(actor, 'application acme / acme application');
    assert.deepEqual(rest, ['service.order', 'service usage.example.com', '—', 'ok']);
    assert.equal(await rows.count(), 1);
    assert.equal(
      await rows.first().getByRole('link', { name: 'usage.example.com' }).getAttribute('href'),
      `${CONSOLE}/services/${service}`,
    );

    // By action and by actor name.
    await page.getByLabel('Actor', { exact: true }).fill('');
    await page.getByLabel('Action').fill('reseller.create');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=reseller\.create/);
    assert.deepEqual(await rows.locator('td:nth-child(3)').allInnerTexts(), ['reseller.create']);
    await page.getByLabel('Action').fill('');
    await page.getByLabel('Actor name').fill('alice');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/actor_name=alice/);
    assert.ok((await rows.count()) >= 4);
    for (const a of await rows.locator('td:nth-child(2)').allInnerTexts()) assert.match(a, /^operator alice/);
    await page.getByLabel('Actor name').fill('');

    // By service: what the application and the operator did to it, and nothing else.
    await page.getByLabel('Actor', { exact: true }).fill('');
    await page.getByLabel('Service id').fill(service);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/service_id=/);
    assert.deepEqual(await rows.locator('td:nth-child(3)').allInnerTexts(), [
      'service.create',
      'service.order',
    ]);

    // A filter the API refuses: its message.
    await page.getByLabel('Service id').fill('');
    await page.getByLabel('Actor', { exact: true }).fill('nobody');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(
      await page.getByRole('alert').innerText(),
      'actor must be operator, application, cli or system, optionally with :id',
    );
    assert.deepEqual(problems, []);
  });

  test('audit: more entries than a page go on with the next page, and `after` lists what followed an entry, oldest first', async () => {
    const quiet = (await findResellerByName(t.ctx.store.db, 'quiet'))!.id;
    for (let i = 0; i < 55; i++) await opsCall(t, ops, 'PUT', `resellers/${quiet}/quota`, { cpu: i });
    await page.goto(`${origin}${CONSOLE}/audit`);
    const table = page.getByRole('table', { name: /^Audit entries/ });
    const requestIds = () => table.locator('tbody tr td:nth-child(7)').allInnerTexts();
    const first = await requestIds();
    assert.equal(first.length, 50);
    await page.getByRole('link', { name: 'Next page →' }).click();
    await page.waitForURL(/cursor=/);
    const second = await requestIds();
    assert.ok(second.length > 5, `${second.length} more`);
    assert.equal(new Set([...first, ...second]).size, first.length + second.length, 'no entry twice');

    const all = (await opsCall(t, ops, 'GET', 'audit?limit=1000')).body.data.items.reverse();
    await page.goto(`${origin}${CONSOLE}/audit`);
    await page.getByLabel('After entry id').fill(all[0].entry_id);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/after=/);
    await page.getByRole('table', { name: 'Audit entries after the given one, oldest first' }).waitFor();
    assert.deepEqual(
      (await requestIds()).slice(0, 3),
      all.slice(1, 4).map((e: { request_id: string | null }) => e.request_id ?? '—'),
    );
    assert.deepEqual(problems, []);
  });
});
