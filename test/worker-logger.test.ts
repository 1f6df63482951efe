/**
 * A worker-only process logs without the HTTP app (src/main.ts, workerLogger): its lines carry
 * no secret either, with the same redaction as the app's logger, and its level is the setting's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workerLogger } from '../src/main.ts';

function capture(level: Parameters<typeof workerLogger>[0]) {
  const lines: Record<string, unknown>[] = [];
  const log = workerLogger(level, {
    write: (line: string) => {
      lines.push(JSON.parse(line));
    },
  });
  return { log, lines };
}

test("a worker-only process's log lines have their secrets redacted, at any depth the app's are", () => {
  const { log, lines } = capture('info');
  log.info(
    {
      password: 'root-pass-1',
      job: { password: 'root-pass-2', client_secret: 'cs-3', access_token: 'at-4', secret: 's-5' },
      headers: { authorization: 'Bearer tok-6' },
      serviceId: 'svc-1',
    },
    'job finished',
  );
  assert.equal(lines.length, 1);
  const text = JSON.stringify(lines[0]);
  for (const secret of ['root-pass-1', 'root-pass-2', 'cs-3', 'at-4', 's-5', 'tok-6'])
    assert.ok(!text.includes(secret), `${secret} in ${text}`);
  assert.equal(lines[0]!['serviceId'], 'svc-1', 'what is not secret is kept');
  assert.equal((lines[0]!['job'] as Record<string, unknown>)['password'], '[redacted]');
});

test("a worker-only process's logger writes at its level and above only", () => {
  const { log, lines } = capture('warn');
  log.info({}, 'not written');
  log.warn({}, 'written');
  assert.deepEqual(
    lines.map((l) => l['msg']),
    ['written'],
  );
});
