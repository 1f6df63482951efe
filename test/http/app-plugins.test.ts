import assert from 'node:assert/strict';
import { test } from 'node:test';
import { namedPlugin } from '../../src/http/named-plugin.ts';
import { createTestApp } from '../helpers/app.ts';

test('each route file is a plugin of its own, named after its function; no plugin goes by its source text', async () => {
  const t = await createTestApp();
  try {
    const tree = t.app.printPlugins();
    const names = [
      'registerProbeRoutes',
      'registerOrderRoutes',
      'registerOperatorJobRoutes',
      'registerConsoleRoutes',
      'oauthTokenEndpoint',
      'consoleRoutes',
    ];
    for (const name of names)
      assert.match(tree, new RegExp(`^[\\s│]*[└├]─[─┬] ${name} `, 'm'), `${name} in\n${tree}`);
    // A plugin without a name is shown by its first lines of source.
    assert.doesNotMatch(tree, /[└├]─[─┬] (async\b|function\b|\()/, tree);
  } finally {
    await t.close();
  }
});

test("namedPlugin sets the name Fastify reads (its display name) and the function's own", () => {
  const plugin = namedPlugin('somePlugin', async () => {});
  assert.equal(
    (plugin as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')],
    'somePlugin',
  );
  assert.equal(plugin.name, 'somePlugin');
});
