/**
 * The operator console in a real browser: Debian's chromium, as its headless shell, driven by
 * playwright-core (no browser download; .ci/run installs the `chromium-headless-shell` package).
 * The headless shell is the same Blink and V8 as the full browser without its windows; it is
 * what Playwright itself runs for headless tests, and here it costs a third of the full
 * browser's CPU time per page (docs/testing.md, "How the suite stays fast"). A page opened here
 * may load only what the test's own server serves: every other request is aborted and reported,
 * and so is every page error and console error, so a test can assert there were none.
 */
import type { AddressInfo } from 'node:net';
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Page,
} from 'playwright-core';
import { CONSOLE } from '../../src/http/base-path.ts';
import type { TestApp } from './app.ts';
import { WAIT_MS } from './budget.ts';
import { laneResource } from './lane.ts';
import { missingTool, toolPath } from './tools.ts';

export { CONSOLE };

/**
 * Why the browser tests are skipped (chromium is not installed, outside CI), or `false`: for
 * `describe(name, { skip: noBrowser }, ...)`.
 */
export const noBrowser = missingTool('chromium');

/**
 * A browser for one test file: its contexts are its own and end with `close()`. Behind it, the
 * files of a lane share one chromium (test/helpers/lane.ts): starting one costs ~3 s of CPU.
 */
export interface TestBrowser {
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** Ends the contexts this file opened (and, outside a lane, the browser). */
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const { resource: browser, release } = await laneResource('chromium', startChromium, (b) => b.close());
  const contexts = new Set<BrowserContext>();
  return {
    async newContext(options) {
      const context = await browser.newContext(options);
      // Every wait for the page (an element, a navigation) has the tests' one wait budget.
      context.setDefaultTimeout(WAIT_MS);
      contexts.add(context);
      context.on('close', () => contexts.delete(context));
      return context;
    },
    async close() {
      await Promise.all([...contexts].map((c) => c.close()));
      await release();
    },
  };
}

async function startChromium(): Promise<Browser> {
  // VRP_TEST_CHROMIUM, else Debian's headless shell; missing, this throws naming the package.
  return chromium.launch({
    executablePath: toolPath('chromium'),
    args: [
      // No name resolves but the loopback ones: nothing the browser does can leave the machine.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
    ],
  });
}

/** The test app listening on loopback; returns its origin (`http://127.0.0.1:PORT`). */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/** What `context.storageState()` gives: a browser's cookies, to open more pages logged in. */
export type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>;

export interface WatchedPage {
  readonly page: Page;
  /** Page errors, console errors and requests to anywhere but `origin`, as they happened. */
  readonly problems: string[];
}

/** A new page in a fresh context (no cookies), watched for errors and foreign requests. */
export async function openPage(
  browser: TestBrowser,
  origin: string,
  options: {
    timezoneId?: string;
    viewport?: { width: number; height: number };
    /** Cookies of an earlier context (`context.storageState()`): a page already logged in. */
    storageState?: StorageState;
    /** false: the page without its script (no live refresh), as a browser with scripts off. */
    javaScriptEnabled?: boolean;
  } = {},
): Promise<WatchedPage> {
  const context = await browser.newContext({
    ...(options.storageState && { storageState: options.storageState }),
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    timezoneId: options.timezoneId ?? 'UTC',
    viewport: options.viewport ?? { width: 1280, height: 800 },
    locale: 'en-GB',
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`)) return route.continue();
    problems.push(`request outside the server: ${url}`);
    return route.abort();
  });
  return { page, problems };
}

/** Logs in through the form, as a person would. */
export async function logIn(page: Page, origin: string, name: string, password: string): Promise<void> {
  await page.goto(`${origin}${CONSOLE}/login`);
  await page.getByLabel('Operator name').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/**
 * Pages logged in as one operator: the first logs in through the form (and lands on the
 * overview), the others open with its cookies, since every password check takes its time.
 */
export function signedInPages(name: string, password: string) {
  let state: StorageState | undefined;
  return async (
    browser: TestBrowser,
    origin: string,
    options: Omit<Parameters<typeof openPage>[2] & {}, 'storageState'> = {},
  ): Promise<WatchedPage> => {
    const watched = await openPage(browser, origin, { ...options, ...(state && { storageState: state }) });
    if (!state) {
      await logIn(watched.page, origin, name, password);
      await watched.page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      state = await watched.page.context().storageState();
    }
    return watched;
  };
}
