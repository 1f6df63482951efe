import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { queuedAgainAfterBegin } from '../helpers/began-job.ts';
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

async function order(t: TestApp, token: string, domain: string): Promise<string> {
  const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data[0].service_id;
}

/** Asks for the service's create; returns the job id it queued. */
async function create(t: TestApp, token: string, id: string): Promise<string> {
  const res = await call(t, token, 'POST', `service/${id}/create`, undefined, B);
  assert.equal(res.status, 200);
  return String(res.headers['x-job-id']);
}

/** The texts of the rows of the page's jobs table. */
function rows(page: Page) {
  return page.locator('#jobs-live tbody tr');
}

describe('console: jobs', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let acme: string;
  let broken: string;
  let waiting: string;

  before(async () => {
    // Every hypervisor operation fails (the simulated driver's fault injection): a create fails.
    [browser, t] = await openTogether([
      launchBrowser(),
      createTestApp({ VRP_SIM_FAULTS: 'permanent=1' }, { worker: true }),
    ]);
    origin = await listen(t);
    acme = await t.token({ reseller: 'acme' });
    const [, id] = await Promise.all([
      createTestOperator(t, { name: 'alice', password: PASSWORD }),
      order(t, acme, 'broken.example.com'),
    ]);
    broken = id;
    await create(t, acme, broken);
    await waitForStatus(t, acme, broken, 'failed');
    // From here on no worker runs: a job queued now stays queued.
    await t.background!.stop(1000);
    waiting = await order(t, acme, 'waiting.example.com');
    await create(t, acme, waiting);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const signIn = signedInPages('alice', PASSWORD);
  const signedIn = (options: { javaScriptEnabled?: boolean } = {}) => signIn(browser, origin, options);

  test('retry a failed job: a new job is queued, the row says so; a second retry is refused with the API’s message', async () => {
    const { page, problems } = await signedIn();
    // Another page, loaded before the retry, still shows the Retry button.
    const { page: stale, problems: staleProblems } = await signedIn();
    await stale.goto(`${origin}${CONSOLE}/jobs?status=failed`);
    await rows(stale).first().waitFor();
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('heading', { level: 1, name: 'Jobs' }).waitFor();
    // Failed is the default tab.
    const tabs = page.getByRole('navigation', { name: 'Jobs by status' });
    assert.equal(await tabs.getByRole('link', { name: 'Failed' }).getAttribute('aria-current'), 'page');
    assert.equal(await rows(page).count(), 1);
    const failed = rows(page).first();
    assert.match(await failed.innerText(), /create\s+.*failed\s+1\s+Simulated permanent fault/s);
    // The service by its domain (and id), the reseller by its name.
    assert.equal(
      await failed.getByRole('link', { name: 'broken.example.com' }).getAttribute('href'),
      `${CONSOLE}/services/${broken}`,
    );
    assert.ok((await failed.innerText()).includes(broken));
    assert.equal(await failed.getByRole('link', { name: 'acme' }).count(), 1);
    assert.equal(await page.locator('[data-live]').count(), 0, 'failed jobs do not change by themselves');

    await failed.getByRole('button', { name: /^Retry/ }).click();
    const flash = page.getByRole('status');
    await flash.waitFor();
    assert.equal(await flash.innerText(), `Retry: queued as a new create job for service ${broken}.`);
    assert.equal(page.url(), `${origin}${CONSOLE}/jobs?status=failed`);

    // The new job waits among the queued ones (no worker runs), behind nothing else of its service.
    await tabs.getByRole('link', { name: 'Queued' }).click();
    await page.waitForURL(/status=queued/);
    const queued = await rows(page).allInnerTexts();
    assert.equal(queued.length, 2);
    assert.ok(queued.some((r) => r.includes(broken) && /create\s+.*queued/s.test(r)));
    // Queued jobs may start any moment: the list refreshes itself while it holds any.
    assert.equal(await page.locator('#jobs-live').getAttribute('data-live'), '2');

    // The failed job was retried: the failed list leaves it out, unless asked to include
    // retried failures; there its row names the new job and offers no second retry.
    await tabs.getByRole('link', { name: 'Failed' }).click();
    await page.waitForURL(/status=failed/);
    assert.equal(await rows(page).count(), 0);
    await page.getByRole('link', { name: 'Include retried failures' }).click();
    await page.waitForURL(/include_retried=true/);
    const after = rows(page).first();
    assert.match(await after.innerText(), /Retried as job [0-9a-f-]{36}/);
    assert.equal(await after.getByRole('button').count(), 0);
    const newJob = (await after.innerText()).match(/Retried as job ([0-9a-f-]{36})/)![1]!;

    // The page loaded before the retry sends it again: refused, naming the job the retry queued.
    await rows(stale)
      .first()
      .getByRole('button', { name: /^Retry/ })
      .click();
    const alert = stale.getByRole('alert');
    await alert.waitFor();
    assert.equal(
      await alert.innerText(),
      `This job was retried already, as job ${newJob}; retry that one if it failed`,
    );
    assert.equal(stale.url(), `${origin}${CONSOLE}/jobs?status=failed`);
    assert.deepEqual(problems, []);
    assert.deepEqual(staleProblems, []);
  });

  test('cancel a queued job: it leaves the queue and its service is back where it was', async () => {
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/jobs?status=queued`);
    const row = rows(page).filter({ hasText: waiting });
    assert.equal(await row.count(), 1);
    await row.getByRole('button', { name: /^Cancel/ }).click();
    const flash = page.getByRole('status');
    await flash.waitFor();
    assert.equal(
      await flash.innerText(),
      `Cancelled the queued create job of service ${waiting}; the service is pending.`,
    );
    assert.equal(page.url(), `${origin}${CONSOLE}/jobs?status=queued`);
    assert.equal(await rows(page).filter({ hasText: waiting }).count(), 0);
    // The reseller sees the job skipped and may ask again.
    const jobs = await call(t, acme, 'GET', `service/${waiting}/jobs`, undefined, B);
    assert.equal(jobs.body.data[0].status, 'skipped');

    // The service's own page shows it too, with the operation it accepts again.
    await page.goto(`${origin}${CONSOLE}/services/${waiting}`);
    assert.match(
      await page.getByRole('table', { name: 'Jobs, newest first' }).innerText(),
      /create\s+skipped/,
    );
    assert.equal(await page.getByRole('button', { name: 'Provision' }).count(), 1);
    assert.equal(await page.locator('[data-live]').count(), 0);

    // A job that is no longer queued cannot be cancelled: the API's refusal, on the page.
    // Without its script, so that its list stays as it was shown (no live refresh): stale.
    const { page: second, problems: secondProblems } = await signedIn({ javaScriptEnabled: false });
    await second.goto(`${origin}${CONSOLE}/jobs?status=queued`);
    const stale = rows(second).first();
    // Cancelled from the first page, then again from the second one's list, now stale.
    await page.goto(`${origin}${CONSOLE}/jobs?status=queued`);
    await rows(page)
      .first()
      .getByRole('button', { name: /^Cancel/ })
      .click();
    await page.getByRole('status').waitFor();
    await stale.getByRole('button', { name: /^Cancel/ }).click();
    const alert = second.getByRole('alert');
    await alert.waitFor();
    assert.equal(
      await alert.innerText(),
      'The job has finished (skipped); only a queued job can be cancelled',
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(secondProblems, []);
  });

  test('a queued job that began has no Cancel button but says why, on the jobs page and its service’s; a plain queued one has one', async () => {
    const [began, plain] = await Promise.all([
      order(t, acme, 'began.example.com'),
      order(t, acme, 'plain.example.com'),
    ]);
    const beganJob = await create(t, acme, began);
    await Promise.all([queuedAgainAfterBegin(t.ctx.store.db, beganJob), create(t, acme, plain)]);
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/jobs?status=queued`);
    const beganRow = rows(page).filter({ hasText: began });
    const plainRow = rows(page).filter({ hasText: plain });
    assert.equal(await beganRow.count(), 1);
    assert.equal(await plainRow.count(), 1);
    assert.match(await beganRow.innerText(), /create\s+.*queued\s+1\s+.*began; cannot be cancelled/s);
    assert.equal(await beganRow.getByRole('button').count(), 0);
    assert.equal(await plainRow.getByRole('button', { name: /^Cancel/ }).count(), 1);
    assert.doesNotMatch(await plainRow.innerText(), /cannot be cancelled/);

    for (const [id, buttons] of [
      [began, 0],
      [plain, 1],
    ] as const) {
      await page.goto(`${origin}${CONSOLE}/services/${id}`);
      const jobs = page.getByRole('table', { name: 'Jobs, newest first' });
      assert.equal(await jobs.getByRole('button', { name: /^Cancel/ }).count(), buttons, id);
      assert.equal(/began; cannot be cancelled/.test(await jobs.innerText()), buttons === 0, id);
    }
    assert.deepEqual(problems, []);
  });

  test('a failed service’s page says why it failed: its create’s error, with the code', async () => {
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${broken}`);
    const facts = page.locator('dl.facts');
    await facts.waitFor();
    assert.match(await page.locator('.service-status').innerText(), /^failed/);
    assert.match(
      await page.locator('.service-error').innerText(),
      /^Simulated permanent fault: .+ \(create_failed\)$/,
    );
    assert.deepEqual(problems, []);
  });
});
