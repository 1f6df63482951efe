/**
 * The test runner's and the bench's view of processes (scripts/processes.ts, Linux /proc): a
 * child is found by its parent and by its environment, a process's CPU time grows as it works,
 * a process that is gone has none, and the machine's idle time is a sum over its cores.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { cpus } from 'node:os';
import { test } from 'node:test';
import { childrenOf, leftBehind, machineIdle, processCpu } from '../../scripts/processes.ts';

test('a child is found by its parent and by its environment; once gone, by neither', async () => {
  const marker = randomUUID();
  const child = spawn('sleep', ['30'], { env: { ...process.env, VRP_PROCESSES_TEST: marker } });
  await once(child, 'spawn');
  try {
    assert.ok(childrenOf(process.pid).includes(child.pid as number));
    assert.deepEqual(
      leftBehind('VRP_PROCESSES_TEST', marker).map((p) => p.pid),
      [child.pid],
    );
    assert.deepEqual(leftBehind('VRP_PROCESSES_TEST', 'another run'), []);
  } finally {
    child.kill();
    await once(child, 'exit');
  }
  assert.ok(!childrenOf(process.pid).includes(child.pid as number));
  assert.equal(processCpu(child.pid as number), undefined);
});

test("a process's CPU time grows as it works", () => {
  const before = processCpu(process.pid);
  assert.ok(before, 'this process has a CPU time');
  // Work, not time: a few hundred hashes of 1 MB, tens of milliseconds of CPU (ticks are 10 ms).
  const data = Buffer.alloc(2 ** 20, 1);
  for (let i = 0; i < 300; i++) createHash('sha256').update(data).digest();
  const after = processCpu(process.pid);
  assert.ok(after && after.user + after.system > before.user + before.system);
});

test("the machine's idle time never falls, and grows by no more than its cores allow", async () => {
  const before = machineIdle();
  assert.ok(before !== undefined, 'this machine has an idle time');
  const t0 = performance.now();
  // Half a second asleep: on a loaded machine nothing may be idle, on a quiet one every core.
  await new Promise((r) => setTimeout(r, 500));
  const after = machineIdle();
  const elapsedUs = (performance.now() - t0) * 1000;
  assert.ok(after !== undefined && after >= before);
  // At most every core idle the whole time (a tick of rounding either side).
  assert.ok(
    after - before <= cpus().length * (elapsedUs + 20_000),
    `${after - before} µs idle in ${elapsedUs} µs`,
  );
});
