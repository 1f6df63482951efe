/**
 * The process's log destination (src/log-destination.ts): the lines of a turn of the event loop
 * go to pino's asynchronous destination together. What a reader of the log sees: every line, in
 * the order written, whole, also when the process exits (or throws) right after writing them.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { logDestination } from '../src/log-destination.ts';

const dir = mkdtempSync(join(tmpdir(), 'vrp-logdest-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const linesOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

test('lines written in one turn and over many turns all reach the file, whole and in order', async () => {
  const file = join(dir, 'order.log');
  const fd = openSync(file, 'a');
  try {
    const d = logDestination(fd);
    const expected: string[] = [];
    // One turn with many lines (more than one of sonic-boom's 16 KiB writes), then a line a turn
    // while earlier writes may still be under way, with multi-byte text among them.
    for (let i = 0; i < 2000; i++) expected.push(`{"n":${i},"msg":"line ${i} ${'x'.repeat(i % 50)}"}`);
    for (const line of expected) d.write(`${line}\n`);
    for (let i = 2000; i < 2300; i++) {
      const line = `{"n":${i},"msg":"tour ${i} é€😀"}`;
      expected.push(line);
      d.write(`${line}\n`);
      if (i % 3 === 0) await turn();
    }
    await d.drain();
    assert.deepEqual(linesOf(file), expected);
  } finally {
    closeSync(fd);
  }
});

test("a pino logger's lines through it are the lines pino makes", async () => {
  const file = join(dir, 'pino.log');
  const fd = openSync(file, 'a');
  try {
    const d = logDestination(fd);
    const log = pino({ base: undefined, timestamp: false }, d);
    log.info({ reqId: 'r-1', res: { statusCode: 200 } }, 'request completed');
    log.warn('second');
    await d.drain();
    assert.deepEqual(
      linesOf(file).map((l) => JSON.parse(l)),
      [
        { level: 30, reqId: 'r-1', res: { statusCode: 200 }, msg: 'request completed' },
        { level: 40, msg: 'second' },
      ],
    );
  } finally {
    closeSync(fd);
  }
});

/**
 * A Node program (an ES module) that runs `body` with `d`, logDestination(`fd`) (`fd` an
 * expression of the program), and `log`, a pino logger on it.
 */
function programWith(fd: string, body: string): string[] {
  const module = join(import.meta.dirname, '..', 'src', 'log-destination.ts');
  const text = `
    import { openSync } from 'node:fs';
    import { pino } from 'pino';
    import { logDestination } from ${JSON.stringify(module)};
    const d = logDestination(${fd});
    const log = pino({ base: undefined, timestamp: false }, d);
    ${body}
  `;
  return ['--input-type=module', '-e', text];
}
const cwd = join(import.meta.dirname, '..');

/** Runs `body` (programWith) in a process of its own, its destination a descriptor open on `file`. */
function child(file: string, body: string) {
  return spawnSync(process.execPath, programWith(`openSync(${JSON.stringify(file)}, 'a')`, body), {
    cwd,
    encoding: 'utf8',
  });
}

const numbers = (file: string) => linesOf(file).map((l) => (JSON.parse(l) as { n: number }).n);
const upTo = (n: number) => Array.from({ length: n + 1 }, (_, i) => i);

test('the lines of the turn in which process.exit() is called are written, after those before', () => {
  const file = join(dir, 'exit.log');
  // Lines written and drained, then a turn's lines that no write has taken yet, then exit.
  const r = child(
    file,
    `
    for (let i = 0; i < 500; i++) log.info({ n: i }, 'before');
    await d.drain();
    for (let i = 500; i < 1000; i++) log.info({ n: i }, 'last turn');
    log.fatal({ n: 1000 }, 'exiting');
    process.exit(3);
    `,
  );
  assert.equal(r.status, 3, r.stderr);
  assert.deepEqual(numbers(file), upTo(1000));
});

test('the lines of the turn in which an uncaught exception ends the process are written', () => {
  const file = join(dir, 'throw.log');
  const r = child(
    file,
    `
    setImmediate(() => {
      for (let i = 0; i < 100; i++) log.info({ n: i }, 'line');
      log.error({ n: 100 }, 'about to throw');
      throw new Error('boom');
    });
    `,
  );
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /boom/);
  assert.deepEqual(numbers(file), upTo(100));
});

test('drained before exit, lines written over many turns while writes are under way are all there, in order', () => {
  const file = join(dir, 'drain.log');
  const r = child(
    file,
    `
    let i = 0;
    const tick = async () => {
      for (let k = 0; k < 50; k++) log.info({ n: i++ }, 'turn');
      if (i < 3000) return setImmediate(tick);
      log.info({ n: i }, 'last');
      await d.drain();
      process.exit(0);
    };
    setImmediate(tick);
    `,
  );
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(numbers(file), upTo(3000));
});

test('at exit, the last lines wait for a full non-blocking pipe to take them', () => {
  // Standard output a pipe made non-blocking (as Node makes it once process.stdout is used), and
  // more lines in the last turn than the pipe holds (64 KiB): the writes at exit meet EAGAIN
  // until the reader (this process) has taken what was written before.
  const r = spawnSync(
    process.execPath,
    programWith(
      '1',
      `
      process.stdout.write('');
      for (let i = 0; i < 5000; i++) log.info({ n: i, pad: 'x'.repeat(200) }, 'line');
      process.exit(0);
      `,
    ),
    { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.split('\n').filter(Boolean);
  assert.deepEqual(
    lines.map((l) => (JSON.parse(l) as { n: number }).n),
    upTo(4999),
  );
});

test('a shutdown is not held up by a destination that no longer takes lines (its reader gone)', {
  timeout: 30_000,
}, async (t) => {
  // The reader of standard output closes it; the lines written after that meet EPIPE, which pino
  // answers by writing nothing more. A drain then resolves at its bound instead of waiting.
  const body = `
    log.info('ready');
    process.on('SIGUSR2', async () => {
      for (let i = 0; i < 100; i++) log.info({ n: i }, 'after the reader left');
      await d.drain(300);
      process.stderr.write('drained\\n');
      process.exit(0);
    });
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, programWith('1', body), {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stdout.once('data', () => {
    child.stdout.destroy();
    child.kill('SIGUSR2');
  });
  assert.equal(await exited, 0, stderr);
  assert.match(stderr, /^drained$/m);
});
