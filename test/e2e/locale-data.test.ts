/**
 * The server keeps the Unicode library's locale data out of its memory (src/domain/code-unit-text.ts;
 * bench/FINDINGS.md, "Locale data kept out of the process"): from its start through an order
 * placed on a host and running, the operator's list of services, the console's page of them and
 * both OpenAPI documents, it calls no built-in that formats or compares for a locale. The
 * trace's own test shows that it sees such a call.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { createOperator } from '../../src/auth/operators.ts';
import { BASE, CONSOLE, OPS } from '../../src/http/base-path.ts';
import { cookieOf } from '../helpers/console-session.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { startServer } from '../helpers/server-process.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const hook = pathToFileURL(resolve(import.meta.dirname, '../helpers/locale-trace.ts')).href;

function traced(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

test('the trace records a call that reads locale data, and its caller', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-locale-'));
  dirs.push(dir);
  const file = join(dir, 'trace.txt');
  execFileSync(
    process.execPath,
    ['--import', hook, '-e', "(10000).toLocaleString('en'); 'a'.localeCompare('b')"],
    {
      env: { ...process.env, VRP_TEST_LOCALE_TRACE: file },
    },
  );
  const lines = traced(file);
  assert.equal(lines.length, 2, lines.join('\n'));
  assert.match(lines[0]!, /^Number\.toLocaleString .*\[eval\]/);
  assert.match(lines[1]!, /^String\.localeCompare /);
});

test('a server starts, places and runs an order, lists it to an operator and serves its documents without locale data', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-locale-'));
  dirs.push(dir);
  const dataDir = join(dir, 'data');
  const file = join(dir, 'trace.txt');
  const { store, app } = await prepareStore(dataDir);
  const password = 'Locale-Free-Console-42';
  const operator = await createOperator(store.db, { name: 'locale-ops', password }, Date.now());
  await store.close();
  const server = await startServer({
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0',
    NODE_OPTIONS: `--import ${hook}`,
    VRP_TEST_LOCALE_TRACE: file,
  });
  try {
    // An order placed on a host (the placement orders the hosts) and running.
    const api = apiClient(() => server.url, await fetchToken(server.url, app));
    const [{ service_id: id }] = await api.ok(
      'POST',
      'service/create-order',
      smallOrder('locale.example.com'),
    );
    await api.ok('POST', `service/${id}/create`);
    await api.settled(String(id), 'running', Date.now() + 30_000, 50);

    // The operator's list, which counts the services.
    const opsToken = await fetchToken(server.url, operator);
    const list = await fetch(`${server.url}${OPS}/services`, {
      headers: { authorization: `Bearer ${opsToken}` },
    });
    assert.equal(list.status, 200);
    const listed = (await list.json()) as { data: { total: number; items: { service_id: string }[] } };
    assert.deepEqual(
      listed.data.items.map((s) => s.service_id),
      [String(id)],
    );
    assert.equal(listed.data.total, 1);

    // The console's page of services, which writes their count.
    const login = await fetch(`${server.url}${CONSOLE}/login`);
    const loginCookie = cookieOf(login.headers.getSetCookie(), 'vrp_console_login');
    const loggedIn = await fetch(`${server.url}${CONSOLE}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        _csrf: loginCookie.slice(loginCookie.indexOf('=') + 1),
        name: 'locale-ops',
        password,
      }).toString(),
    });
    assert.equal(loggedIn.status, 303, await loggedIn.text());
    const page = await fetch(`${server.url}${CONSOLE}/services`, {
      headers: { cookie: cookieOf(loggedIn.headers.getSetCookie(), 'vrp_console') },
    });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /1 service\b/);

    // Both documents, whose paths are sorted as they are made.
    for (const path of [`${BASE}/openapi.json`, `${OPS}/openapi.json`])
      assert.equal((await fetch(`${server.url}${path}`)).status, 200, path);
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
  assert.deepEqual(traced(file), []);
});
