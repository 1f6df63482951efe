import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import {
  CONSOLE,
  launchBrowser,
  listen,
  logIn,
  noBrowser,
  openPage,
  type TestBrowser,
} from '../helpers/browser.ts';
import { vrpOn } from '../helpers/cli.ts';
import { createManualClock, type ManualClock } from '../helpers/manual-clock.ts';
import { openTogether } from '../helpers/open-together.ts';
import { createTestOperator } from '../helpers/operator.ts';

const PASSWORD = 'correct horse battery staple';

/** What the operator's authenticator app shows at `nowMs` for the secret read off the page. */
function appCode(secret: string, nowMs: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: nowMs,
  });
}

/** Enrols the signed-in operator through the page; returns the secret as shown and the recovery codes. */
async function enrol(
  page: Page,
  origin: string,
  clock: ManualClock,
): Promise<{ secret: string; codes: string[] }> {
  await page.goto(`${origin}${CONSOLE}/two-factor`);
  await page.getByRole('heading', { level: 1, name: 'Set up two-factor login' }).waitFor();
  const secret = (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
  assert.match(secret, /^[A-Z2-7]{32}$/);
  // The QR code is an SVG made by the server, and loads under the console's CSP.
  const qr = page.getByRole('img', { name: 'QR code of the two-factor secret' });
  await qr.waitFor();
  assert.ok(
    await qr.evaluate(
      (img) => Reflect.get(img, 'complete') === true && Number(Reflect.get(img, 'naturalWidth')) > 0,
    ),
  );
  const svg = await page.request.get(`${origin}${CONSOLE}/two-factor/qr.svg`);
  assert.equal(svg.status(), 200);
  assert.match(svg.headers()['content-type'] ?? '', /^image\/svg\+xml/);
  assert.match(await svg.text(), /<svg/);

  // A wrong code first: refused, nothing changes.
  await page.getByLabel('Code from the app').fill(appCode(secret, clock.now() + 10 * 60_000));
  await page.getByRole('button', { name: 'Turn on two-factor login' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /^Wrong code: two-factor login is not on/ })
    .waitFor();
  assert.equal((await page.locator('#totp-secret').innerText()).replace(/\s/g, ''), secret);

  await page.getByLabel('Code from the app').fill(appCode(secret, clock.now()));
  await page.getByRole('button', { name: 'Turn on two-factor login' }).click();
  await page.getByRole('heading', { level: 1, name: 'Two-factor login is on' }).waitFor();
  const codes = await page.locator('#recovery-codes li').allInnerTexts();
  assert.equal(codes.length, 10);
  // Shown once: the page now says only how many are left.
  await page.goto(`${origin}${CONSOLE}/two-factor`);
  assert.equal(await page.locator('#recovery-left').innerText(), '10');
  assert.equal(await page.locator('#recovery-codes').count(), 0);
  return { secret, codes };
}

async function typeCode(page: Page, code: string): Promise<void> {
  await page.getByLabel('Code from your authenticator app, or a recovery code').fill(code);
  await page.getByRole('button', { name: 'Continue' }).click();
}

async function loggedOut(page: Page, origin: string): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${origin}${CONSOLE}/login`);
}

describe('console two-factor login', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  const clock = createManualClock(1_800_000_000_000);
  before(async () => {
    [browser, t] = await openTogether([launchBrowser(), createTestApp({}, { clock })]);
    origin = await listen(t);
    await createTestOperator(t, { name: 'alice', password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('enrolment, then login with a code; wrong, reused and recovery codes; reset by the CLI', async () => {
    const { page, problems } = await openPage(browser, origin);
    await logIn(page, origin, 'alice', PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const { secret, codes } = await enrol(page, origin, clock);

    // The password now leads to the code's page; its half login opens nothing else.
    await loggedOut(page, origin);
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/login/code`);
    await page.goto(`${origin}${CONSOLE}/services`);
    assert.match(page.url(), /\/console\/login\?next=/);
    assert.equal(await page.getByRole('navigation', { name: 'Console' }).count(), 0);
    await page.goto(`${origin}${CONSOLE}/login/code`);

    // The code that confirmed the enrolment was used: refused, said so.
    await typeCode(page, appCode(secret, clock.now()));
    assert.match(await page.getByRole('alert').innerText(), /used already/);
    // A wrong code.
    await typeCode(page, appCode(secret, clock.now() + 10 * 60_000));
    assert.equal(
      await page.getByRole('alert').innerText(),
      'Wrong code. Type the 6 digits your authenticator app shows now, or a recovery code.',
    );
    assert.equal(await page.getByRole('navigation', { name: 'Console' }).count(), 0);
    // The next step's code (no 30 s wait: the server's clock moves).
    clock.advance(30_000);
    const code = appCode(secret, clock.now());
    await typeCode(page, code);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();

    // The same code again, in another login: refused.
    await loggedOut(page, origin);
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/login/code`);
    await typeCode(page, code);
    assert.match(await page.getByRole('alert').innerText(), /This code has been used already/);

    // A recovery code: once.
    const [recovery = ''] = codes;
    await typeCode(page, recovery);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    assert.match(await page.getByRole('status').innerText(), /recovery code; 9 left/);
    await loggedOut(page, origin);
    await logIn(page, origin, 'alice', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/login/code`);
    await typeCode(page, recovery);
    assert.match(await page.getByRole('alert').innerText(), /This recovery code has been used already/);

    // vrp operator list says who has a second factor.
    const listed = await vrpOn(t, 'operator', 'list', '--json');
    assert.equal(listed.json().find((o: { name: string }) => o.name === 'alice').two_factor, true);
    // vrp operator reset-2fa: the password alone logs in again.
    const reset = await vrpOn(t, 'operator', 'reset-2fa', 'alice', '--json');
    assert.equal(reset.code, 0, reset.err);
    assert.deepEqual(reset.json(), { operator: 'alice', two_factor_removed: true });
    await loggedOut(page, origin);
    await logIn(page, origin, 'alice', PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const relisted = await vrpOn(t, 'operator', 'list', '--json');
    assert.equal(relisted.json().find((o: { name: string }) => o.name === 'alice').two_factor, false);
    const again = await vrpOn(t, 'operator', 'reset-2fa', 'alice');
    assert.match(again.out, /had no two-factor login; nothing changed/);
    const unknown = await vrpOn(t, 'operator', 'reset-2fa', 'mallory');
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.err, /no operator named "mallory"/);
    // Browsers log the 401 answers themselves as console errors; nothing else may appear.
    assert.deepEqual(
      problems.filter((p) => !/status of 401/.test(p)),
      [],
    );
  });

  test('five wrong codes lock the second step out, with Retry-After', async () => {
    await createTestOperator(t, { name: 'bob', password: PASSWORD });
    const { page } = await openPage(browser, origin);
    await logIn(page, origin, 'bob', PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const { secret } = await enrol(page, origin, clock);
    await loggedOut(page, origin);
    await logIn(page, origin, 'bob', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/login/code`);
    for (let i = 0; i < 5; i += 1) {
      await typeCode(page, '000000');
      assert.match(await page.getByRole('alert').innerText(), /^Wrong code/);
    }
    // The right code (the next step's, within the drift) waits too: the lock-out has not ended.
    const answer = page.waitForResponse(
      (r) => r.url().endsWith('/login/code') && r.request().method() === 'POST',
    );
    await typeCode(page, appCode(secret, clock.now() + 30_000));
    const res = await answer;
    assert.equal(res.status(), 429);
    assert.ok(Number(res.headers()['retry-after']) > 0);
    assert.match(await page.getByRole('alert').innerText(), /Too many wrong codes/);
  });
});

describe('console two-factor login required (VRP_CONSOLE_REQUIRE_2FA=1)', { skip: noBrowser }, () => {
  let browser: TestBrowser;
  let t: TestApp;
  let origin: string;
  const clock = createManualClock(1_800_000_000_000);
  before(async () => {
    [browser, t] = await openTogether([
      launchBrowser(),
      createTestApp({ VRP_CONSOLE_REQUIRE_2FA: '1' }, { clock }),
    ]);
    origin = await listen(t);
    await createTestOperator(t, { name: 'carol', password: PASSWORD });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('an operator without two-factor login is sent to enrolment and opens nothing else until enrolled', async () => {
    const { page } = await openPage(browser, origin);
    await logIn(page, origin, 'carol', PASSWORD);
    await page.waitForURL(`${origin}${CONSOLE}/two-factor`);
    assert.match(await page.getByRole('alert').innerText(), /Two-factor login is required/);
    for (const path of ['/', '/services', '/audit']) {
      await page.goto(`${origin}${CONSOLE}${path}`);
      assert.equal(page.url(), `${origin}${CONSOLE}/two-factor`, path);
    }
    // A form of another page is refused, and sends it back there too.
    const form = await page.request.post(`${origin}${CONSOLE}/hosts`, {
      form: { _csrf: 'x', name: 'h' },
      maxRedirects: 0,
    });
    assert.equal(form.status(), 303);
    assert.equal(form.headers()['location'], `${CONSOLE}/two-factor`);
    const before = (await page.context().cookies()).find((c) => c.name === 'vrp_console')?.value;
    const { secret } = await enrol(page, origin, clock);
    // Enrolment completed the login with a new session secret.
    const after = (await page.context().cookies()).find((c) => c.name === 'vrp_console')?.value;
    assert.ok(after && after !== before);
    await page.goto(`${origin}${CONSOLE}/services`);
    await page.getByRole('heading', { level: 1, name: 'Services' }).waitFor();

    // The next login asks for the code, and then goes where the browser was going.
    await loggedOut(page, origin);
    await page.goto(`${origin}${CONSOLE}/jobs`);
    await page.getByLabel('Operator name').fill('carol');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${origin}${CONSOLE}/login/code?next=%2Fvps_reseller_provider%2Fconsole%2Fjobs`);
    clock.advance(30_000);
    await typeCode(page, appCode(secret, clock.now()));
    await page.waitForURL(`${origin}${CONSOLE}/jobs`);
    await page.getByRole('heading', { level: 1, name: 'Jobs' }).waitFor();
  });
});
