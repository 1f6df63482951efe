import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { sshKeyFingerprint } from '../../src/domain/ssh-keys.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createTrafficSampler } from '../../src/jobs/traffic-sampler.ts';
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
import { withLibvirtMac } from '../helpers/libvirt.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';
import { sshKeyPair } from '../helpers/ssh-key-pair.ts';

const PASSWORD = 'correct horse battery staple';
const B = { 'x-envelope-variant': 'B' };

/** Orders a service for the reseller and provisions it; returns its id once it runs. */
async function runningService(t: TestApp, token: string, domain: string): Promise<string> {
  const order = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), B);
  assert.equal(order.status, 200, JSON.stringify(order.body));
  const id: string = order.body.data[0].service_id;
  assert.equal((await call(t, token, 'POST', `service/${id}/create`, undefined, B)).status, 200);
  await waitForStatus(t, token, id, 'running');
  return id;
}

/** The rows of the page's table, as their link texts (the services' domains). */
async function listedDomains(page: Page): Promise<string[]> {
  return page.locator('tbody tr td:first-child a').allInnerTexts();
}

describe('console: services', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  let alpha: string;
  let beta: string;
  before(async () => {
    // Slowed so that a stop takes long enough (1.6 s) to be watched on the page, and provisioning
    // stays short (3.2 s).
    [browser, t] = await openTogether([
      launchBrowser(),
      createTestApp({ VRP_SIMULATED_SPEED: '0.4' }, { worker: true }),
    ]);
    origin = await listen(t);
    const acme = await t.token({ reseller: 'acme' });
    [alpha, beta] = await Promise.all([
      runningService(t, acme, 'alpha.example.com'),
      runningService(t, acme, 'beta.example.com'),
      createTestOperator(t, { name: 'alice', password: PASSWORD }),
    ]);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A fresh page with alice's session (logged in once: a password check takes its time). */
  const signIn = signedInPages('alice', PASSWORD);
  const signedIn = () => signIn(browser, origin);

  test('search by domain and by id prefix, filter by status, open a service and see its facts', async () => {
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/`);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Services' }).click();
    await page.getByRole('heading', { level: 1, name: 'Services' }).waitFor();
    assert.deepEqual((await listedDomains(page)).sort(), ['alpha.example.com', 'beta.example.com']);

    await page.getByLabel('Search').fill('beta.example.com');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=beta\.example\.com/);
    assert.deepEqual(await listedDomains(page), ['beta.example.com']);

    // Ids made together share their first characters (UUIDv7: the time comes first).
    const prefix = alpha.slice(0, 30);
    await page.getByLabel('Search').fill(prefix);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(new RegExp(`q=${prefix}`));
    assert.deepEqual(await listedDomains(page), ['alpha.example.com']);

    await page.getByLabel('Search').fill('');
    await page.getByLabel('Status').selectOption('stopped');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/status=stopped/);
    assert.equal(await page.getByText('No service matches.').count(), 1);
    await page.getByLabel('Status').selectOption('running');
    await page.getByLabel('Reseller').selectOption({ label: 'acme' });
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/status=running/);
    assert.deepEqual((await listedDomains(page)).sort(), ['alpha.example.com', 'beta.example.com']);

    await page.getByRole('link', { name: 'beta.example.com' }).click();
    await page.getByRole('heading', { level: 1, name: 'beta.example.com' }).waitFor();
    const facts = await page.locator('dl.facts').innerText();
    assert.match(facts, new RegExp(beta));
    assert.match(facts, /Status\s+running/);
    assert.match(facts, /Reseller\s+acme/);
    assert.match(facts, /Host\s+sim-host-\d/);
    assert.doesNotMatch(facts, /MAC address/, 'the simulated hypervisor gives none');
    assert.match(facts, /1 vCores|\d+ vCores/);
    // A libvirt server's MAC address (its driver's row) is among the facts.
    await withLibvirtMac(t.ctx.store.db, beta, '52:54:0a:0b:0c:0d', async () => {
      await page.reload();
      assert.match(
        await page.locator('dl.facts').innerText(),
        /Host\s+sim-host-\d+ active\s+MAC address\s+52:54:0a:0b:0c:0d/,
      );
    });
    // The timeline: the create job, done.
    const timeline = page.getByRole('table', { name: 'Jobs, newest first' });
    assert.match(await timeline.innerText(), /create\s+succeeded/);
    // Who started it: the reseller's application that asked for the create.
    assert.match(await timeline.innerText(), /create\s+succeeded\s+application acme \/ acme application/);
    // A running server: stop, not start; nothing pending, so the page does not refresh itself.
    assert.equal(await page.getByRole('button', { name: 'Stop', exact: true }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Start', exact: true }).count(), 0);
    assert.equal(await page.locator('[data-live]').count(), 0);
    assert.deepEqual(problems, []);
  });

  test('stop a server and watch its status change to stopped without reloading the page', async () => {
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${alpha}`);
    const status = page.locator('.service-status');
    assert.equal((await status.innerText()).trim(), 'running');
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Stop: queued' }).waitFor();
    // Right after the form: the stop is pending (not yet stopped), and the region refreshes itself.
    const first = (await status.innerText()).trim();
    assert.match(first, /^(running → stopped|stopping → stopped) 1 pending$/);
    assert.equal(await page.locator('#service-live').getAttribute('data-live'), '2');
    // A mark on this very document: a reload or a navigation would lose it.
    await page.evaluate(() => {
      (globalThis as { notReloaded?: boolean }).notReloaded = true;
    });
    await status.filter({ hasText: /^\s*stopped\s*$/ }).waitFor();
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true);
    // Nothing pending any more: the region stops refreshing, and the timeline shows the stop done.
    assert.equal(await page.locator('#service-live').getAttribute('data-live'), null);
    assert.match(
      await page.getByRole('table', { name: 'Jobs, newest first' }).locator('tbody tr').first().innerText(),
      /stop\s+succeeded\s+operator alice/,
    );
    // What the API says about it agrees.
    const token = await t.token({ reseller: 'acme' });
    assert.equal(
      (await call(t, token, 'GET', `service/${alpha}/status`, undefined, B)).body.data.status,
      'stopped',
    );
    // The operations were those of the projected status (stopped) already: start, not stop.
    assert.equal(await page.getByRole('button', { name: 'Start', exact: true }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Stop', exact: true }).count(), 0);
    assert.deepEqual(problems, []);
  });

  test('an operation the API refuses shows its message; a terminate asks first', async () => {
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${beta}`);
    await page.getByLabel(/New root password/).fill('alllowercase');
    await page.getByRole('button', { name: 'Set the root password' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.equal(
      await alert.innerText(),
      'password must contain at least three of: lower-case letters, upper-case letters, digits, symbols',
    );
    assert.equal(page.url(), `${origin}${CONSOLE}/services/${beta}`);
    assert.equal(await page.locator('[data-live]').count(), 0, 'no job was queued');

    // Terminate asks; saying no sends nothing.
    const questions: string[] = [];
    page.once('dialog', (d) => {
      questions.push(d.message());
      void d.dismiss();
    });
    await page.getByRole('button', { name: 'Terminate' }).click();
    assert.match(questions[0] ?? '', /^Terminate this server\?/);
    assert.equal((await page.locator('.service-status').innerText()).trim(), 'running');
    assert.equal(await page.locator('[data-live]').count(), 0);

    // A service id that names nothing: the API's 404, as a page.
    const missing = await page.goto(`${origin}${CONSOLE}/services/00000000-0000-4000-8000-000000000000`);
    assert.equal(missing?.status(), 404);
    assert.equal(await page.getByRole('alert').innerText(), 'Service not found');
    const bad = await page.goto(`${origin}${CONSOLE}/services?status=nonsense`);
    assert.equal(bad?.status(), 400);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Refused');
    assert.deepEqual(
      problems.filter((p) => !/status of 40[04]/.test(p)),
      [],
    );
  });

  test('reinstall: the form offers the product’s templates; a bad key is refused with its message; keys and password reach the service', async () => {
    const acme = await t.token({ reseller: 'acme' });
    const id = await runningService(t, acme, 'reinstall.example.com');
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    const select = page.getByLabel(/Reinstall from template/);
    assert.deepEqual(await select.locator('option').allInnerTexts(), [
      'Debian 12',
      'Ubuntu 24.04 LTS',
      'Rocky Linux 9',
    ]);
    const accept = () => page.once('dialog', (d) => void d.accept());

    // A private key pasted by mistake: the API's refusal, naming the line, and nothing queued.
    const pair = sshKeyPair('ed25519', { comment: 'console' });
    await select.selectOption({ label: 'Ubuntu 24.04 LTS' });
    await page.getByLabel(/SSH public keys for root/).fill(`${pair.public}\n${pair.private}`);
    accept();
    await page.getByRole('button', { name: 'Reinstall' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(
      await page.getByRole('alert').innerText(),
      /^ssh_keys\[1\]: this is \(the start of\) a private key/,
    );
    assert.equal(await page.locator('[data-live]').count(), 0, 'no job was queued');

    const other = sshKeyPair('ecdsa', { bits: 256, comment: 'second' }).public;
    await page.getByLabel(/Reinstall from template/).selectOption({ label: 'Ubuntu 24.04 LTS' });
    await page.getByLabel(/Root password after the reinstall/).fill('Console-Reinstall-2');
    await page.getByLabel(/SSH public keys for root/).fill(`  ${pair.public}\r\n\n${other}\n`);
    accept();
    await page.getByRole('button', { name: 'Reinstall' }).click();
    await page.getByRole('status').filter({ hasText: 'Reinstall: queued' }).waitFor();
    await page
      .locator('.service-status')
      .filter({ hasText: /^\s*running\s*$/ })
      .waitFor();
    const details = (await call(t, acme, 'GET', `service/${id}/details`, undefined, B)).body.data;
    assert.deepEqual(
      [details.template_id, details.password, details.ssh_key_fingerprints],
      [
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a02',
        'Console-Reinstall-2',
        [sshKeyFingerprint(pair.public), sshKeyFingerprint(other)],
      ],
    );
    assert.match(await page.locator('dl.facts').innerText(), /SSH keys\s+SHA256:/);
    assert.deepEqual(
      problems.filter((p) => !/status of 400/.test(p)),
      [],
    );

    // A suspended service accepts no reinstall: no form.
    await call(t, acme, 'POST', `service/${id}/suspend`, undefined, B);
    await waitForStatus(t, acme, id, 'suspended');
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    assert.equal(await page.getByRole('button', { name: 'Reinstall' }).count(), 0);
  });

  test('backups: the chain of each, and Verify reads one back and says what it found', async () => {
    const acme = await t.token({ reseller: 'acme' });
    const id = await runningService(t, acme, 'gamma.example.com');
    for (let i = 0; i < 2; i++) {
      assert.equal((await call(t, acme, 'POST', `service/${id}/backup/create`, undefined, B)).status, 200);
      await waitForStatus(t, acme, id, 'running');
    }
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    const rows = page.locator('section[aria-labelledby="backups-h"] tbody tr');
    assert.equal(await rows.count(), 2);
    // Newest first: the second backup is an incremental one on the first.
    const first = (await rows.nth(1).innerText()).split('\t');
    // On the first backup's time, written as the Created column writes it.
    assert.equal((await rows.nth(0).innerText()).split('\t')[2], `incremental on ${first[0]}`);
    assert.ok(first.includes('full'), first.join(' | '));

    await rows
      .nth(1)
      .getByRole('button', { name: /^Verify the backup of / })
      .click();
    const status = page.getByRole('status');
    await status.waitFor();
    assert.match(
      await status.innerText(),
      /^The backup is intact: its \d+ segments read back and checked\.$/,
    );

    // One byte of the first backup's data object flipped in the store: Verify names the segment.
    const backups = (await call(t, acme, 'GET', `service/${id}/backups`, undefined, B)).body.data;
    const oldest = backups.at(-1).backup_id;
    const dir = join(t.dataDir, 'backups', id, oldest);
    const dataFile = join(dir, readdirSync(dir).find((f) => f.startsWith('data.')) ?? 'data');
    const bytes = readFileSync(dataFile);
    bytes[20] = (bytes[20] as number) ^ 0xff;
    writeFileSync(dataFile, bytes);
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    await rows
      .nth(1)
      .getByRole('button', { name: /^Verify the backup of / })
      .click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(
      await alert.innerText(),
      /^The backup is damaged: segment 0 \(disk bytes 0-\d+\) does not match its checksum\.$/,
    );
    assert.deepEqual(problems, []);
  });

  test('Open console opens the server’s console in a new tab; a stopped server has no such button', async () => {
    const acme = await t.token({ reseller: 'acme' });
    const id = await runningService(t, acme, 'console-tab.example.com');
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    const [tab] = await Promise.all([
      page.context().waitForEvent('page'),
      page.getByRole('button', { name: 'Open console' }).click(),
    ]);
    await tab.locator('.xterm-rows').getByText('console-tab.example.com login:').waitFor();
    assert.match(tab.url(), /\/service-console\/[A-Za-z0-9_-]{43}$/);
    await tab.close();
    assert.equal((await call(t, acme, 'POST', `service/${id}/stop`, undefined, B)).status, 200);
    await waitForStatus(t, acme, id, 'stopped');
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    assert.equal((await page.locator('.service-status').innerText()).trim(), 'stopped');
    assert.equal(await page.getByRole('button', { name: 'Open console' }).count(), 0);
    assert.deepEqual(problems, []);
  });

  test('the service page shows the IPv6 prefix and this month’s traffic', async () => {
    const ops = await operatorToken(t);
    // An IPv6 pool that names no host serves every host: the next server gets a prefix.
    const pool = await opsCall(t, ops, 'POST', 'ip-pools', {
      name: 'console-v6',
      family: 'ipv6',
      network: '2001:db8:7000::/48',
      host_ids: [],
    });
    assert.equal(pool.status, 200, JSON.stringify(pool.body));
    const acme = await t.token({ reseller: 'acme' });
    const id = await runningService(t, acme, 'traffic-page.example.com');
    const sampler = createTrafficSampler({
      db: t.ctx.store.db,
      driver: t.driver!,
      clock: t.ctx.clock,
      log: t.app.log,
      intervalMs: 0,
    });
    await sampler.pass();
    await outside.traffic(t.ctx.store.db, id, 2_500_000_000, 750_000_000);
    await sampler.pass();
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    assert.equal(
      (await page.locator('.service-ipv6').innerText()).trim(),
      '2001:db8:7000::1 in 2001:db8:7000::/64, gateway fe80::1',
    );
    assert.equal((await page.locator('.service-traffic').innerText()).trim(), '2.5 GB in, 0.75 GB out');
    assert.deepEqual(problems, []);
  });

  test('the service page shows its suspension history: who suspended it and why, who lifted it', async () => {
    const acme = await t.token({ reseller: 'acme' });
    const id = await runningService(t, acme, 'history.example.com');
    const { page, problems } = await signedIn();
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    const history = page.getByRole('table', { name: 'Suspensions, newest first' });
    const section = page.getByRole('region', { name: 'Suspension history' });
    assert.equal((await section.locator('p').innerText()).trim(), 'Never suspended.');
    // Suspended by alice in the console, lifted by bob with the API, suspended again by the reseller.
    await page.getByLabel('Reason for the suspension (optional, shown to the reseller)').fill('abuse report');
    await page.getByRole('button', { name: 'Suspend', exact: true }).click();
    await page.getByText('Suspend: queued.').waitFor();
    await waitForStatus(t, acme, id, 'suspended');
    const bob = await operatorToken(t, await createTestOperator(t, { name: 'bob' }));
    assert.equal((await opsCall(t, bob, 'POST', `services/${id}/unsuspend`)).status, 200);
    await waitForStatus(t, acme, id, 'running');
    assert.equal(
      (await call(t, acme, 'POST', `service/${id}/suspend`, { suspend_reason: 'unpaid' }, B)).status,
      200,
    );
    await waitForStatus(t, acme, id, 'suspended');
    await page.goto(`${origin}${CONSOLE}/services/${id}`);
    const rows = await history
      .locator('tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) =>
          [...tr.querySelectorAll('td')].map((td, i) => (i === 0 || i === 3 ? '' : td.innerText)),
        ),
      );
    assert.deepEqual(rows, [
      ['', 'application acme / acme application', 'unpaid', '', '—'],
      ['', 'operator alice', 'abuse report', '', 'operator bob'],
    ]);
    assert.equal(
      await history.locator('tbody tr').first().locator('td').nth(3).innerText(),
      'still suspended',
    );
    assert.deepEqual(problems, []);
  });
});
