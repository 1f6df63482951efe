/**
 * On SQLite an order is answered only once the WAL that holds it is on the disk: strace, attached
 * to every thread of a real server, shows an `fdatasync` of the WAL that began after the WAL's
 * last write and ended before the answer was written (src/store/wal-sync.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { startServer } from '../helpers/server-process.ts';
import { missingTool, toolPath } from '../helpers/tools.ts';

/** One system call of the trace: its thread, its name, whether this line starts it and whether it ends it. */
interface Call {
  readonly thread: string;
  readonly name: string;
  readonly starts: boolean;
  readonly ends: boolean;
  readonly text: string;
}

/**
 * strace -f lines, on its stderr: `[pid N] name(args) = r` (no prefix for the thread it attached
 * first), `... name(args <unfinished ...>` and `... <... name resumed>...) = r`.
 */
function parseTrace(text: string): Call[] {
  const calls: Call[] = [];
  for (const raw of text.split('\n')) {
    const m = /^(?:\[pid\s+(\d+)\] )?(.*)$/.exec(raw);
    const thread = m?.[1] ?? 'first';
    const rest = m?.[2] ?? '';
    const resumed = /^<\.\.\. (\w+) resumed>/.exec(rest);
    if (resumed) {
      calls.push({ thread, name: resumed[1]!, starts: false, ends: true, text: raw });
      continue;
    }
    const call = /^(\w+)\(/.exec(rest);
    if (call)
      calls.push({
        thread,
        name: call[1]!,
        starts: true,
        ends: !rest.includes('<unfinished ...>'),
        text: raw,
      });
  }
  return calls;
}

test('an order is answered only after an fdatasync of the WAL that holds it', {
  skip: missingTool('strace'),
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-durable-'));
  const { store, app } = await prepareStore(dataDir);
  await store.close();
  const server = await startServer({ VRP_DATA_DIR: dataDir });
  after(async () => {
    await server.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const api = apiClient(() => server.url, await fetchToken(server.url, app));

  // Every thread of the server (-p with -f): the event loop's and libuv's pool, where the flush
  // runs. The trace goes to strace's stderr, which it does not buffer, with strings long enough
  // to show the answer's body.
  const strace = spawn(
    toolPath('strace'),
    [
      '-f',
      '-y',
      '-s',
      '4096',
      '-e',
      'trace=pwrite64,fdatasync,fsync,write,writev',
      '-p',
      String(server.child.pid),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let trace = '';
  strace.stderr.setEncoding('utf8');
  strace.stderr.on('data', (d: string) => {
    trace += d;
  });
  const exited = new Promise((resolve) => strace.once('exit', resolve));
  after(() => {
    if (strace.exitCode === null) strace.kill('SIGKILL');
  });
  // Attached once a request's answer shows in the trace.
  // strace that cannot attach (ptrace not allowed here) exits at once: said at once, not waited for.
  const stillTracing = () => {
    if (strace.exitCode !== null)
      throw new Error(`strace exited with ${strace.exitCode}:\n${trace.slice(-2000)}`);
  };
  await waitUntil('strace to attach and trace an answer', async () => {
    stillTracing();
    await api.ok('GET', 'version');
    return trace.includes('HTTP/1.1 200');
  });
  const [{ service_id: serviceId }] = await api.ok(
    'POST',
    'service/create-order',
    smallOrder('durable.example.com'),
  );
  const id = String(serviceId);
  assert.match(id, /^\S+$/);
  // strace prints a call once it has returned: wait for the answer's write to show.
  await waitUntil('the answer in the trace', async () => {
    stillTracing();
    return trace.includes(id);
  });
  strace.kill('SIGINT');
  await exited;

  const calls = parseTrace(trace);
  // The answer: the write that carries the new service's id.
  const answer = calls.findIndex((c) => c.starts && /^(write|writev)$/.test(c.name) && c.text.includes(id));
  assert.ok(answer >= 0, `the order's answer is in the trace:\n${trace.slice(-4000)}`);
  assert.match(calls[answer]!.text, /HTTP\/1\.1 200/);
  const walWrites = calls.slice(0, answer).filter((c) => c.name === 'pwrite64' && c.text.includes('-wal>'));
  assert.ok(walWrites.length > 0, 'the order was written to the WAL before its answer');
  const lastWrite = calls.indexOf(walWrites.at(-1)!);
  // A flush of the WAL that started after its last write, and ended (on its thread) before the answer.
  const flushed = calls.some((c, i) => {
    if (i <= lastWrite || i >= answer || !c.starts || c.name !== 'fdatasync' || !c.text.includes('-wal>'))
      return false;
    if (c.ends) return / = 0$/.test(c.text);
    return calls
      .slice(i + 1, answer)
      .some((r) => !r.starts && r.name === 'fdatasync' && r.thread === c.thread && / = 0$/.test(r.text));
  });
  assert.ok(
    flushed,
    `an fdatasync of the WAL between its last write and the answer:\n${calls
      .slice(lastWrite, answer + 1)
      .map((c) => c.text.slice(0, 200))
      .join('\n')}`,
  );
});
