/**
 * The console's usage presets, totals row and per-service CSV; the reseller's external billing id
 * (editable by admin and billing); the failed jobs with domain and reseller, retried ones hidden.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { newJobRow } from '../../src/store/repos/jobs.ts';
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
import { createManualClock } from '../helpers/manual-clock.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';
const B = { 'x-envelope-variant': 'B' };
const HOUR = 3_600_000;

describe('console: usage presets and totals, billing ids, failed jobs', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let admin: Page;
  let problems: string[];
  const services: Record<string, string> = {};
  let failedJob: string;
  let retriedJob: string;

  async function as(name: string): Promise<{ page: Page; problems: string[] }> {
    const opened = await openPage(browser, origin);
    await logIn(opened.page, origin, name, PASSWORD);
    await opened.page.waitForURL(`${origin}${CONSOLE}/`);
    return opened;
  }

  before(async () => {
    // The first of January 2031, 00:00 UTC: this month is January, last month December 2030.
    const clock = createManualClock(Date.UTC(2031, 0, 1));
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, { worker: true, clock })]);
    origin = await listen(t);
    const ops = await operatorToken(t, await createTestOperator(t, { name: 'alice', password: PASSWORD }));
    await createTestOperator(t, { name: 'bob', password: PASSWORD, role: 'billing' });
    await createTestOperator(t, { name: 'carol', password: PASSWORD, role: 'support' });
    const tokens = { acme: await t.token({ reseller: 'acme' }), beta: await t.token({ reseller: 'beta' }) };
    for (const [reseller, domain] of [
      ['acme', 'one.example.com'],
      ['beta', 'two.example.com'],
    ] as const) {
      const order = await call(t, tokens[reseller], 'POST', 'service/create-order', smallOrder(domain), B);
      services[domain] = order.body.data[0].service_id;
      await opsCall(t, ops, 'POST', `services/${services[domain]}/create`);
      await waitForStatus(t, tokens[reseller], services[domain]!, 'running');
    }
    clock.advance(2 * HOUR);
    // Two failed jobs of two.example.com: one retried already, one not.
    const db = t.ctx.store.db;
    for (const [action, retried] of [
      ['stop', true],
      ['restart', false],
    ] as const) {
      const s = await db
        .selectFrom('services')
        .select(['reseller_id', 'job_seq'])
        .where('id', '=', services['two.example.com']!)
        .executeTakeFirstOrThrow();
      const row = newJobRow({
        id: randomUUID(),
        serviceId: services['two.example.com']!,
        resellerId: s.reseller_id,
        action,
        params: {},
        seq: s.job_seq + 1,
        now: clock.now(),
      });
      await db
        .insertInto('jobs')
        .values({
          ...row,
          status: 'failed',
          error: `${action} failed`,
          finished_at: clock.now(),
          retry_job_id: retried ? randomUUID() : null,
        })
        .execute();
      await db
        .updateTable('services')
        .set({ job_seq: s.job_seq + 1 })
        .where('id', '=', row.service_id)
        .execute();
      if (retried) retriedJob = row.id;
      else failedJob = row.id;
    }
    ({ page: admin, problems } = await as('alice'));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('usage: preset links fill the range; the table ends with a totals row', async () => {
    await admin.goto(`${origin}${CONSOLE}/usage?from=2020-01-01&to=2020-02-01`);
    const presets = admin.getByRole('navigation', { name: 'Preset periods' });
    assert.equal(
      await presets.getByRole('link', { name: 'Last month' }).getAttribute('href'),
      `${CONSOLE}/usage?from=2030-12-01&to=2031-01-01`,
    );
    await presets.getByRole('link', { name: 'This month' }).click();
    await admin.waitForURL(`${origin}${CONSOLE}/usage?from=2031-01-01&to=2031-02-01`);
    assert.equal(await admin.getByLabel('From (included, UTC)').inputValue(), '2031-01-01');
    assert.equal(await admin.getByLabel('To (not included, UTC)').inputValue(), '2031-02-01');

    const report = admin.getByRole('table', { name: 'Usage per reseller and product' });
    const rows = await report.locator('tbody tr').all();
    assert.equal(rows.length, 2);
    const figures = await Promise.all(rows.map((r) => r.locator('td.num').allInnerTexts()));
    const totals = report.locator('tfoot tr');
    assert.equal(await totals.getByRole('rowheader').innerText(), 'Total');
    const sums = await totals.locator('td.num').allInnerTexts();
    assert.equal(sums.length, figures[0]!.length);
    sums.forEach((sum, i) => {
      assert.equal(Number(sum), Number(figures[0]![i]) + Number(figures[1]![i]), `column ${i}`);
    });
    assert.deepEqual([sums[0], sums[1], sums[2]], ['2', '4', '4'], 'services, service hours, vCore hours');
    assert.deepEqual(problems, []);
  });

  test('usage: the per-service CSV downloads with one line per service and resource', async () => {
    await admin.goto(`${origin}${CONSOLE}/usage?from=2031-01-01&to=2031-02-01`);
    const [download] = await Promise.all([
      admin.waitForEvent('download'),
      admin.getByRole('link', { name: /Per-service CSV/ }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'usage-per-service-2031-01-01-2031-02-01.csv');
    const lines = (await readFile((await download.path())!, 'utf8')).trimEnd().split('\r\n');
    assert.equal(
      lines[0],
      'from,to,reseller_id,reseller_name,reseller_external_billing_id,service_id,domain,product_id,product_name,plan_name,resource,quantity,unit',
    );
    const one = lines.filter((l) => l.includes(',one.example.com,'));
    assert.ok(
      one.some((l) => l.endsWith(',Starter S,service_hours,2,hours')),
      one.join('\n'),
    );
    assert.ok(
      one.some((l) => l.endsWith(',Starter S,hdd_gb_hours,40,GB-hours')),
      one.join('\n'),
    );
    assert.deepEqual(problems, []);
  });

  test('the reseller page: billing sets the external billing id, a bad one is refused; support cannot', async () => {
    const beta = (await findResellerByName(t.ctx.store.db, 'beta'))!;
    const bob = await as('bob');
    await bob.page.goto(`${origin}${CONSOLE}/resellers/${beta.id}`);
    assert.equal(
      await bob.page.getByRole('button', { name: 'Save quota' }).count(),
      0,
      'no quota form for billing',
    );
    await bob.page.getByLabel('External billing id').fill('CUST-0042');
    await bob.page.getByRole('button', { name: 'Save billing id' }).click();
    await bob.page.getByRole('status').waitFor();
    assert.equal(await bob.page.getByRole('status').innerText(), 'External billing id saved.');
    assert.equal(await bob.page.getByLabel('External billing id').inputValue(), 'CUST-0042');
    assert.match(await bob.page.locator('dl.facts').innerText(), /External billing id\s+CUST-0042/);

    await bob.page.getByLabel('External billing id').fill('bad\u0007id');
    await bob.page.getByRole('button', { name: 'Save billing id' }).click();
    await bob.page.getByRole('alert').waitFor();
    assert.match(await bob.page.getByRole('alert').innerText(), /external_billing_id must be printable text/);
    assert.equal((await findResellerByName(t.ctx.store.db, 'beta'))!.externalBillingId, 'CUST-0042');
    assert.deepEqual(
      bob.problems.filter((p) => !/status of 400/.test(p)),
      [],
    );

    const carol = await as('carol');
    await carol.page.goto(`${origin}${CONSOLE}/resellers/${beta.id}`);
    assert.match(await carol.page.locator('dl.facts').innerText(), /External billing id\s+CUST-0042/);
    assert.equal(await carol.page.getByLabel('External billing id').count(), 0, 'no form for support');
    assert.deepEqual(carol.problems, []);
  });

  test('failed jobs: domain and reseller on each row; retried failures hidden until asked for', async () => {
    await admin.goto(`${origin}${CONSOLE}/jobs?status=failed`);
    const table = admin.getByRole('table', { name: 'Failed jobs, newest first' });
    const rows = table.locator('tbody tr');
    assert.equal(await rows.count(), 1);
    assert.equal(
      await rows.first().getByRole('link', { name: 'two.example.com' }).getAttribute('href'),
      `${CONSOLE}/services/${services['two.example.com']}`,
    );
    const beta = (await findResellerByName(t.ctx.store.db, 'beta'))!;
    assert.equal(
      await rows.first().getByRole('link', { name: 'beta' }).getAttribute('href'),
      `${CONSOLE}/resellers/${beta.id}`,
    );
    assert.ok((await rows.first().innerText()).includes('restart'));
    assert.ok(
      await rows.first().getByRole('button', { name: 'Retry the restart job of two.example.com' }).count(),
    );

    await admin.getByRole('link', { name: 'Include retried failures' }).click();
    await admin.waitForURL(`${origin}${CONSOLE}/jobs?status=failed&include_retried=true`);
    assert.equal(await rows.count(), 2);
    assert.match(await table.innerText(), /Retried as job/);
    await admin.getByRole('link', { name: 'Hide retried failures' }).click();
    await admin.waitForURL(`${origin}${CONSOLE}/jobs?status=failed`);
    assert.equal(await rows.count(), 1);
    assert.ok(failedJob && retriedJob);
    assert.deepEqual(problems, []);
  });
});
