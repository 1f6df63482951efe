/**
 * On SQLite an order is answered only once the WAL that holds it is on the disk: strace, attached
 * to every thread of a real server, shows an `fdatasync` of the WAL that began after the WAL's
 * last write and ended before the answer was written (src/store/wal-sync.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { startServer } from '../helpers/server-process.ts';
import { missingTool, toolPath } from '../helpers/tools.ts';

/** One system call of the trace: its thread, its name, whether this line starts it and whether it ends it. */
interface Call {
  readonly line: number;
  readonly name: string;
  readonly starts: boolean;
  readonly ends: boolean;
  readonly text: string;
}

/** strace -f lines: `PID name(args) = r`, `PID name(args <unfinished ...>`, `PID <... name resumed>...) = r`. */
function parseTrace(text: string): Call[] {
  const calls: Call[] = [];
  text.split('\n').forEach((raw, line) => {
    const resumed = /^\d+ <\.\.\. (\w+) resumed>/.exec(raw);
    if (resumed) {
      calls.push({ line, name: resumed[1]!, starts: false, ends: true, text: raw });
      return;
    }
    const call = /^\d+ (\w+)\(/.exec(raw);
    if (call)
      calls.push({ line, name: call[1]!, starts: true, ends: !raw.includes('<unfinished ...>'), text: raw });
  });
  return calls;
}

test('an order is answered only after an fdatasync of the WAL that holds it', {
  skip: missingTool('strace'),
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-durable-'));
  const { store, app } = await prepareStore(dataDir);
  await store.close();
  const server = await startServer({ VRP_DATA_DIR: dataDir });
  const traceFile = join(dataDir, 'trace.txt');
  after(async () => {
    await server.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const api = apiClient(() => server.url, await fetchToken(server.url, app));

  // Every thread of the server (-p with -f): the event loop's and libuv's pool, where the flush runs.
  const strace = spawn(
    toolPath('strace'),
    [
      '-f',
      '-y',
      '-s',
      '32',
      '-e',
      'trace=pwrite64,fdatasync,fsync,write,writev',
      '-o',
      traceFile,
      '-p',
      String(server.child.pid),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let straceErr = '';
  strace.stderr.on('data', (d) => {
    straceErr += d;
  });
  const exited = new Promise((resolve) => strace.once('exit', resolve));
  // Attached once a request's answer shows in the trace.
  await waitUntil(`strace to attach (${straceErr})`, async () => {
    await api.ok('GET', 'version');
    try {
      return readFileSync(traceFile, 'utf8').includes('HTTP/1.1 200');
    } catch {
      return false;
    }
  });
  const before = parseTrace(readFileSync(traceFile, 'utf8')).length;
  const [{ service_id: serviceId }] = await api.ok(
    'POST',
    'service/create-order',
    smallOrder('durable.example.com'),
  );
  assert.match(String(serviceId), /\S/);
  strace.kill('SIGINT');
  await exited;

  const calls = parseTrace(readFileSync(traceFile, 'utf8')).slice(before);
  const answer = calls.findIndex(
    (c) => c.starts && /^(write|writev)$/.test(c.name) && c.text.includes('HTTP/1.1 200'),
  );
  assert.ok(answer >= 0, `the order's answer is in the trace:\n${calls.map((c) => c.text).join('\n')}`);
  const walWrites = calls.slice(0, answer).filter((c) => c.name === 'pwrite64' && c.text.includes('-wal>'));
  assert.ok(walWrites.length > 0, 'the order was written to the WAL before its answer');
  const lastWrite = calls.indexOf(walWrites.at(-1)!);
  // A flush of the WAL that started after its last write, and ended (on its thread) before the answer.
  const flushStarts = calls
    .map((c, i) => ({ c, i }))
    .filter(
      ({ c, i }) =>
        i > lastWrite && i < answer && c.starts && c.name === 'fdatasync' && c.text.includes('-wal>'),
    );
  const flushed = flushStarts.some(({ c, i }) => {
    if (c.ends) return / = 0$/.test(c.text);
    const thread = c.text.split(' ')[0];
    return calls
      .slice(i + 1, answer)
      .some(
        (r) => !r.starts && r.name === 'fdatasync' && r.text.startsWith(`${thread} `) && / = 0$/.test(r.text),
      );
  });
  assert.ok(
    flushed,
    `an fdatasync of the WAL between its last write and the answer:\n${calls
      .slice(lastWrite, answer + 1)
      .map((c) => c.text)
      .join('\n')}`,
  );
});
