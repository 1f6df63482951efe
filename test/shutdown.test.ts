/**
 * A shutdown step that fails is logged, the later steps still run, and the process
 * exits (with 1) instead of dying on an unhandled rejection with the store left open.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { runToExit } from './helpers/run-to-exit.ts';

const shutdown = pathToFileURL(resolve('src/shutdown.ts')).href;

/** A process that installs the signal handlers with `steps` (JS source), then gets a SIGTERM. */
function terminatedWith(steps: string) {
  const script = `
    const { default: pino } = await import('pino');
    const { exitOnSignals } = await import(${JSON.stringify(shutdown)});
    exitOnSignals(() => ${steps}, pino());
    setInterval(() => {}, 1000);
    process.kill(process.pid, 'SIGTERM');
  `;
  return runToExit(['--input-type=module', '-e', script], {});
}

test('a failing shutdown step is logged, the next steps run, and the process exits 1', async () => {
  const r = await terminatedWith(`[
    { name: 'http', run: async () => { throw new Error('close failed: boom'); } },
    { name: 'store', run: async () => console.log('store closed') },
  ]`);
  assert.equal(r.code, 1, r.stderr);
  const logged = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  const failure = logged.find((l) => l.msg === 'shutdown step failed');
  assert.ok(failure, r.stdout);
  assert.equal(failure.step, 'http');
  assert.match(failure.err.message, /close failed: boom/);
  assert.match(r.stdout, /store closed/, 'the store is closed all the same');
});

test('a clean shutdown exits 0', async () => {
  assert.equal((await terminatedWith(`[{ name: 'store', run: async () => {} }]`)).code, 0);
});
