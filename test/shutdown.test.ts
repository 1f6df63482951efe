/**
 * Issue 12: a shutdown step that fails is logged, the later steps still run, and the process
 * exits (with 1) instead of dying on an unhandled rejection with the store left open.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const shutdown = pathToFileURL(resolve('src/shutdown.ts')).href;

/** A process that installs the signal handlers with `steps` (JS source), says "ready", and waits. */
function processWith(steps: string) {
  const script = `
    const { default: pino } = await import('pino');
    const { exitOnSignals } = await import(${JSON.stringify(shutdown)});
    exitOnSignals(() => ${steps}, pino());
    setInterval(() => {}, 1000);
    console.log('ready');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return {
    child,
    output: () => out,
    exited,
    async ready() {
      while (!out.includes('ready')) await new Promise((r) => setTimeout(r, 20));
    },
  };
}

test('a failing shutdown step is logged, the next steps run, and the process exits 1', async () => {
  const p = processWith(`[
    { name: 'http', run: async () => { throw new Error('close failed: boom'); } },
    { name: 'store', run: async () => console.log('store closed') },
  ]`);
  await p.ready();
  p.child.kill('SIGTERM');
  assert.equal(await p.exited, 1);
  const lines = p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  const failure = lines.find((l) => l.msg === 'shutdown step failed');
  assert.ok(failure, p.output());
  assert.equal(failure.step, 'http');
  assert.match(failure.err.message, /close failed: boom/);
  assert.match(p.output(), /store closed/, 'the store is closed all the same');
});

test('a clean shutdown exits 0', async () => {
  const p = processWith(`[{ name: 'store', run: async () => {} }]`);
  await p.ready();
  p.child.kill('SIGTERM');
  assert.equal(await p.exited, 0);
});
