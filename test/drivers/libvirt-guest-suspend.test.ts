/**
 * A guest that suspends itself (`echo mem > /sys/power/state`, what `systemctl suspend` does), on
 * real VMs (libvirt/QEMU, the tiny test template). A VM the driver defines has the guest's
 * suspend off (ACPI S3 and S4, `<pm>`): the guest's kernel is offered no deep sleep. A VM defined
 * before that rule (its definition without `<pm>`, made so here) can sleep: its domain is then
 * `pmsuspended`, which holds its memory, answers no ACPI shutdown and refuses `virsh start`. The
 * driver shows it running, its start wakes it (no reboot), its stop wakes it for the ACPI
 * shutdown and powers it off when that times out, and its next boot is of its own definition
 * with the suspend off. Runs where VRP_TEST_LIBVIRT_TEMPLATE names
 * a template built by scripts/libvirt/build-test-template.sh and libvirtd runs.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { HypervisorDriver } from '../../src/drivers/driver.ts';
import type { Store } from '../../src/store/database.ts';
import { slowWaitMs, waitUntil } from '../helpers/budget.ts';
import {
  closeLibvirtDriverOnStore,
  guestExecWhenUp,
  guestReport,
  guestSpawn,
  libvirtDriverOnStore,
} from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const URI = 'qemu:///system';
const vmId = randomUUID();
const domain = `vrp-${vmId}`;
const virsh = (...args: string[]) => execFileSync('virsh', ['-c', URI, ...args], { encoding: 'utf8' }).trim();

/** A shell command in the guest through its agent, once the agent answers. */
const inGuest = (shell: string) => guestExecWhenUp(domain, shell);

/** The sleep states the guest's kernel is offered (`/sys/power/mem_sleep`: "s2idle [deep]" where ACPI S3 is). */
async function memSleep(): Promise<string> {
  const r = await inGuest('cat /sys/power/mem_sleep');
  assert.equal(r.code, 0);
  return r.out.trim();
}

/** The guest suspends itself to memory; waited for until its domain says so. */
async function guestSleeps(): Promise<void> {
  await guestSpawn(domain, 'sleep 1; echo mem > /sys/power/state');
  await waitUntil(
    'the domain to be pmsuspended',
    () => virsh('domstate', domain) === 'pmsuspended' || undefined,
    {
      everyMs: 250,
      budgetMs: slowWaitMs(60_000),
    },
  );
}

/** The suspend settings of the domain's own definition (`<pm>`), as libvirt keeps it. */
const definitionPm = () =>
  /<pm>[\s\S]*?<\/pm>/.exec(virsh('dumpxml', '--inactive', domain))?.[0].replace(/\s+/g, ' ') ?? 'none';
const SUSPEND_OFF = "<pm> <suspend-to-mem enabled='no'/> <suspend-to-disk enabled='no'/> </pm>";

describe('libvirt: a guest that suspends itself', { skip: noLibvirtTemplate }, () => {
  let store: Store;
  let driver: HypervisorDriver;
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lvpm-'));

  before(async () => {
    ({ store, driver } = await libvirtDriverOnStore(dataDir));
  });

  after(async () => {
    await closeLibvirtDriverOnStore({ store, driver }, dataDir, [vmId]);
  });

  test('a VM the driver defines: its guest is offered no deep sleep', async () => {
    await driver.create({
      vmId,
      hostname: 'sleepy.example.com',
      username: 'root',
      password: 'Sleepy-password-1',
      templateId: 'tiny',
      cpu: 1,
      ramGb: 1,
      diskGb: 1,
      ipCount: 0,
    });
    await guestReport(vmId, 1);
    assert.equal(definitionPm(), SUSPEND_OFF);
    assert.equal(await memSleep(), '[s2idle]');
  });

  test('defined before the rule: asleep it shows running, and a start wakes it without a reboot', async () => {
    // Its definition as an older version wrote it: no <pm>, so QEMU offers the guest ACPI S3.
    virsh('destroy', domain);
    const older = virsh('dumpxml', '--inactive', domain).replace(/<pm>[\s\S]*?<\/pm>\s*/, '');
    const file = join(dataDir, 'older.xml');
    writeFileSync(file, older);
    virsh('define', file);
    rmSync(file);
    assert.equal(definitionPm(), 'none');
    virsh('start', domain);
    await guestReport(vmId, 2);
    assert.equal(await memSleep(), 's2idle [deep]');

    await guestSleeps();
    // It holds its memory and cores: running, as the host's list says (not stopped, as before).
    assert.equal((await driver.inspect(vmId))?.power, 'running');
    const started = await driver.start(vmId);
    assert.equal(started.power, 'running');
    assert.equal(virsh('domstate', domain), 'running');
    // Woken, not booted again: the guest's agent answers and its disk counts two boots.
    assert.equal((await inGuest('cat /data/boots')).out.trim(), '2');
  });

  test('asleep, a stop wakes it for its ACPI shutdown, then powers it off; its next boot has the suspend off', async () => {
    // libvirt's events of the domain, from before it sleeps: a change of its live title shows
    // the watch is listening.
    const watch = spawn('virsh', ['-c', URI, 'event', '--domain', domain, '--all', '--loop'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let events = '';
    watch.stdout.on('data', (c: Buffer) => {
      events += c.toString();
    });
    const seen = (what: string, re: RegExp) =>
      waitUntil(what, () => re.test(events) || undefined, { everyMs: 100, budgetMs: slowWaitMs(60_000) });
    try {
      await waitUntil(
        'the event watch to listen',
        () => {
          virsh('desc', '--live', '--title', domain, 'watched');
          return /metadata-change/.test(events) || undefined;
        },
        { everyMs: 500, budgetMs: slowWaitMs(60_000) },
      );
      await guestSleeps();
      await seen("libvirt's pm-suspend event", /pm-suspend/);
      const stopped = await driver.stop(vmId, { timeoutMs: 3_000 });
      assert.equal(stopped.power, 'stopped');
      assert.equal(virsh('domstate', domain), 'shut off');
      // Woken before the shutdown was asked (a guest asleep handles no ACPI event); this guest
      // has no ACPI daemon, so the stop's time ran out and it was powered off.
      await seen("libvirt's pm-wakeup event", /pm-wakeup/);
    } finally {
      watch.kill();
    }

    const started = await driver.start(vmId);
    assert.equal(started.power, 'running');
    await guestReport(vmId, 3);
    assert.equal(definitionPm(), SUSPEND_OFF);
    assert.equal(await memSleep(), '[s2idle]');
  });
});
