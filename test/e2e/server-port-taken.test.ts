/**
 * The tests' server processes (test/helpers/server-process.ts) are given a port that was free
 * when asked for; another test's process may bind it before the server does. The server then
 * refuses to start, saying so, and the helper starts it again on another port.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../scripts/postgres.ts';
import { WAIT_MS } from '../helpers/budget.ts';
import { startServer } from '../helpers/server-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-port-taken-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

test('a server whose port another process took first is started again on another, and answers there', async () => {
  const squatter = createServer((socket) => socket.destroy()).listen(0, '127.0.0.1');
  await once(squatter, 'listening');
  const taken = (squatter.address() as { port: number }).port;
  const given: number[] = [];
  const ports = async () => {
    const port = given.length === 0 ? taken : await freePort();
    given.push(port);
    return port;
  };
  try {
    const server = await startServer({ VRP_DATA_DIR: dataDir }, WAIT_MS, undefined, undefined, ports);
    try {
      assert.equal(given.length, 2, 'a second port after the first was found taken');
      assert.equal(given[0], taken);
      assert.equal(server.port, given[1]);
      // This server, on its store: ready (the squatter would have closed the connection).
      const res = await fetch(`${server.url}/readyz`);
      assert.equal(res.status, 200);
    } finally {
      await server.stop();
    }
  } finally {
    squatter.close();
  }
});

test('a server that cannot start for another reason is not started again: its error is the test’s', async () => {
  let asked = 0;
  const ports = async () => {
    asked++;
    return freePort();
  };
  await assert.rejects(
    startServer({ VRP_DATA_DIR: '/proc/vrp-data' }, WAIT_MS, undefined, undefined, ports),
    /server exited with 2:[\s\S]*VRP_DATA_DIR \(\/proc\/vrp-data\) cannot be used/,
  );
  assert.equal(asked, 1);
});
