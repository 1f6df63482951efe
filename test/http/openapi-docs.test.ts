/**
 * The API reference at {base}/docs: served by the server itself, without a token, loading
 * nothing from elsewhere, showing the document at {base}/openapi.json.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';
import { BASE, createTestApp, type TestApp } from '../helpers/app.ts';

const DOCS = `${BASE}/docs`;

describe('the API reference page', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, { demo: false });
  });
  after(() => t.close());

  const get = (url: string) => t.app.inject({ method: 'GET', url });

  test('the page answers without a token, as HTML, with a Content-Security-Policy of its own server only', async () => {
    for (const url of [DOCS, `${DOCS}/`]) {
      const res = await get(url);
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      const csp = String(res.headers['content-security-policy']);
      for (const directive of [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
      ]) {
        assert.ok(csp.includes(directive), `${directive} in ${csp}`);
      }
      assert.ok(!/unsafe-(inline|eval)/.test(csp), csp);
    }
  });

  test('the page and its settings name no absolute http(s) URL; every file they load answers 200 with its media type', async () => {
    const page = (await get(DOCS)).body;
    assert.doesNotMatch(page, /https?:\/\//i);
    assert.doesNotMatch(
      page,
      /<script>|<style>|\sstyle=|\son[a-z]+=/i,
      'nothing inline for the CSP to allow',
    );
    const loaded = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(loaded.sort(), [
      `${DOCS}/favicon-16x16.png`,
      `${DOCS}/favicon-32x32.png`,
      `${DOCS}/settings.js`,
      `${DOCS}/swagger-ui-bundle.js`,
      `${DOCS}/swagger-ui.css`,
    ]);
    const types: Record<string, string> = {
      css: 'text/css; charset=utf-8',
      js: 'text/javascript; charset=utf-8',
      png: 'image/png',
    };
    for (const url of loaded) {
      const res = await get(url);
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.headers['content-type'], types[url.split('.').at(-1)!], url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      const name = url.slice(DOCS.length + 1);
      if (name !== 'settings.js')
        assert.ok(res.rawPayload.equals(readFileSync(join(getAbsoluteFSPath(), name))), url);
    }
    const settings = (await get(`${DOCS}/settings.js`)).body;
    assert.doesNotMatch(settings, /https?:\/\//i);
    assert.match(settings, /validatorUrl: null/);
    assert.ok(settings.includes(`url: "${BASE}/openapi.json"`), settings);
  });

  test('the document it shows is docs/openapi.json, served by the server', async () => {
    const res = await get(`${BASE}/openapi.json`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const committed = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
    assert.deepEqual(res.json(), committed);
  });

  test('/docs leads to the page; a file the page does not load is 404 in the envelope', async () => {
    const short = await get('/docs');
    assert.equal(short.statusCode, 302);
    assert.equal(short.headers.location, DOCS);
    for (const name of ['index.html', 'swagger-ui-bundle.js.map', '..%2Fpackage.json', 'constructor']) {
      const res = await get(`${DOCS}/${name}`);
      assert.equal(res.statusCode, 404, name);
      assert.equal(res.json().error_code, 'not_found');
    }
    const wrong = await t.app.inject({ method: 'POST', url: DOCS });
    assert.equal(wrong.statusCode, 405);
  });
});
