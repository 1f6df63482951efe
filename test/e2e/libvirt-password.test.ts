/**
 * On real VMs: a password reset reaches a running guest through its QEMU guest
 * agent at once (no reboot), and a guest without an agent gets it at its next boot. The tiny
 * template runs Debian's qemu-guest-agent, and its chpasswd prints the sha256 of each new
 * password on the serial console (scripts/libvirt/guest-chpasswd.sh); its `no-agent/` twin
 * starts no agent. Each test's VM lives on a test host of its own (scripts/libvirt/test-host.sh).
 * The passwords begin with "-", as about one generated password in 60 does: the guest must hash
 * it as a password, not take it for an option (the boot line reports `none` if root got no hash).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { slowWaitMs } from '../helpers/budget.ts';
import { consoleLines, startLibvirtE2eOnTestHost } from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The console lines of VM `vmId` starting with `prefix` (read through libvirt), once there are at least `n`. */
async function linesOf(
  uri: string,
  vmId: string,
  prefix: string,
  n: number,
  until: number,
): Promise<string[]> {
  for (;;) {
    const lines = consoleLines(vmId, uri).filter((l) => l.startsWith(prefix));
    if (lines.length >= n || Date.now() > until) return lines;
    await sleep(300);
  }
}

type Started = Awaited<ReturnType<typeof startLibvirtE2eOnTestHost>>;

/** Waits until the service is `want` with no job left (failed ends the wait with the jobs). */
async function waitSettled(s: Started, id: string, want: string, until: number): Promise<void> {
  while (Date.now() < until) {
    const status = await s.api.ok('GET', `service/${id}/status`);
    if (status.status === want && status.job === null) return;
    assert.notEqual(status.status, 'failed', JSON.stringify(await s.api.ok('GET', `service/${id}/jobs`)));
    await sleep(300);
  }
  assert.fail(`service ${id} did not become ${want}`);
}

/** Orders and creates a service; returns its id once its guest has printed its boot line. */
async function provisioned(s: Started, until: number): Promise<{ id: string; consoleLog: string }> {
  const [{ service_id: id }] = await s.api.ok('POST', 'service/create-order', s.order);
  await s.api.ok('POST', `service/${id}/create`);
  await waitSettled(s, id, 'running', until);
  const consoleLog = id;
  assert.equal((await linesOf(s.uri, consoleLog, 'VRP-GUEST ', 1, until)).length, 1, 'the guest booted');
  return { id, consoleLog };
}

/** The reset's job, once it has finished. */
async function resetPassword(s: Started, id: string, password: string, until: number) {
  await s.api.ok('POST', `service/${id}/reset-password`, { password });
  await waitSettled(s, id, 'running', until);
  const [job] = await s.api.ok('GET', `service/${id}/jobs`);
  assert.equal(job.action, 'reset_password');
  assert.equal(job.status, 'succeeded', JSON.stringify(job));
  return job;
}

async function terminate(s: Started, id: string, until: number): Promise<void> {
  await s.api.ok('POST', `service/${id}/terminate`);
  await waitSettled(s, id, 'terminated', until);
}

test('a running guest with the agent gets a new password at once, without a reboot', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(600_000),
}, async () => {
  const until = Date.now() + slowWaitMs(420_000);
  const s = await startLibvirtE2eOnTestHost('lvpw-now', 'lvpwnow', 'agent.example.com');
  const { id, consoleLog } = await provisioned(s, until);
  // The agent starts right after the boot line: wait until it answers, as a panel would not.
  const domain = `vrp-${id}`;
  for (;;) {
    try {
      execFileSync(
        'virsh',
        ['-c', s.uri, 'qemu-agent-command', '--timeout', '5', domain, '{"execute":"guest-ping"}'],
        { stdio: 'pipe' },
      );
      break;
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(500);
    }
  }
  const job = await resetPassword(s, id, '-Live-pass-word-7', until);
  assert.deepEqual(job.result, { password_applies: 'now' });
  assert.equal((await s.api.ok('GET', `service/${id}/details`)).password_applies, 'now');
  const changed = await linesOf(s.uri, consoleLog, 'VRP-GUEST-PASSWORD ', 1, until);
  assert.equal(changed.length, 1, 'the guest reported one password change');
  assert.match(changed[0]!, new RegExp(`user=root password_sha256=${sha256('-Live-pass-word-7')}`));
  assert.equal((await linesOf(s.uri, consoleLog, 'VRP-GUEST ', 1, until)).length, 1, 'no reboot');
  await terminate(s, id, until);
});

test('a guest without the agent gets the new password at its next boot', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(600_000),
}, async () => {
  const until = Date.now() + slowWaitMs(420_000);
  const s = await startLibvirtE2eOnTestHost('lvpw-boot', 'lvpwboot', 'noagent.example.com');
  // The operator's image of this template is one without qemu-guest-agent.
  await s.store.db
    .updateTable('os_templates')
    .set({ image: join(libvirtTemplate!, 'no-agent') })
    .where('id', '=', s.order.template_id)
    .execute();
  const { id, consoleLog } = await provisioned(s, until);
  const job = await resetPassword(s, id, '-Boot-pass-word-8', until);
  assert.deepEqual(job.result, { password_applies: 'next_boot' });
  assert.equal((await s.api.ok('GET', `service/${id}/details`)).password_applies, 'next_boot');
  assert.deepEqual(
    await linesOf(s.uri, consoleLog, 'VRP-GUEST-PASSWORD ', 1, Date.now()),
    [],
    'nothing set live',
  );
  await s.api.ok('POST', `service/${id}/restart`);
  await waitSettled(s, id, 'running', until);
  const boots = await linesOf(s.uri, consoleLog, 'VRP-GUEST ', 2, until);
  assert.equal(boots.length, 2, 'the guest booted again');
  assert.match(
    boots[1]!,
    new RegExp(`password_sha256=${sha256('-Boot-pass-word-8')} `),
    'the boot applied it',
  );
  await terminate(s, id, until);
});
