/**
 * On a real VM, through the reseller API of a server process with the libvirt driver: an SSH key
 * given at order is in the guest's /root/.ssh/authorized_keys; the console link's page, in
 * chromium, shows the guest's own serial console and what is typed there reaches it; a reinstall
 * boots a new system (a new cloud-init instance id, a fresh disk, the new password, the same
 * addresses); a rescue boots the rescue system with the server's disk attached, and unrescue
 * boots the server's own system again. The tiny test template reports each boot on its serial
 * console (scripts/libvirt/guest-init.sh) and runs a login there.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { sshKeyFingerprint } from '../../src/domain/ssh-keys.ts';
import { launchBrowser, noBrowser, openPage } from '../helpers/browser.ts';
import { slowWaitMs } from '../helpers/budget.ts';
import { consoleLines, consoleText, startLibvirtE2e } from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';
import { sshKeyPair } from '../helpers/ssh-key-pair.ts';

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Started = Awaited<ReturnType<typeof startLibvirtE2e>>;

/** The guest's boot reports (`VRP-GUEST key=value ...` lines), parsed, once there are at least `n`. */
async function reports(vmId: string, n: number, until: number): Promise<Record<string, string>[]> {
  for (;;) {
    const lines = consoleLines(vmId).filter(
      (l) => l.startsWith('VRP-GUEST ') && l.includes(' ssh_key_sha256='),
    );
    if (lines.length >= n) {
      return lines.map((l) =>
        Object.fromEntries(
          l
            .trim()
            .split(' ')
            .slice(1)
            .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
        ),
      );
    }
    assert.ok(Date.now() < until, `fewer than ${n} boot reports on ${vmId}'s console:\n${consoleText(vmId)}`);
    await sleep(500);
  }
}

/** Waits until the service is `want` with no job left (failed ends the wait with the jobs). */
async function settled(s: Started, id: string, want: string, until: number): Promise<void> {
  while (Date.now() < until) {
    const status = await s.api.ok('GET', `service/${id}/status`);
    if (status.status === want && status.job === null) return;
    assert.notEqual(status.status, 'failed', JSON.stringify(await s.api.ok('GET', `service/${id}/jobs`)));
    await sleep(300);
  }
  assert.fail(
    `service ${id} did not become ${want}: ${JSON.stringify(await s.api.ok('GET', `service/${id}/jobs`))}`,
  );
}

test('a real VM: the SSH key of the order, the console page in chromium, reinstall, rescue and back', {
  skip: noLibvirtTemplate || noBrowser,
  timeout: slowWaitMs(1_500_000),
}, async () => {
  const until = Date.now() + slowWaitMs(1_200_000);
  // The test template serves as the rescue image too: it reports the disks it sees.
  const s = await startLibvirtE2e('lvself', 'self.example.com', { VRP_RESCUE_IMAGE: libvirtTemplate! });
  const browser = await launchBrowser();
  let id: string | undefined;
  try {
    const key = sshKeyPair('ed25519', { comment: 'e2e@example' }).public.trim();
    const keySha = sha256(Buffer.from(key.split(' ')[1]!, 'base64'));
    const [ordered] = await s.api.ok('POST', 'service/create-order', { ...s.order, ssh_keys: [key] });
    id = ordered.service_id as string;
    await s.api.ok('POST', `service/${id}/create`);
    await settled(s, id, 'running', until);
    const [first] = await reports(id, 1, until);
    assert.equal(first!['ssh_key_sha256'], `${keySha},`, 'the key is in root’s authorized_keys');
    const details = await s.api.ok('GET', `service/${id}/details`);
    assert.deepEqual(details.ssh_key_fingerprints, [sshKeyFingerprint(key)]);

    // The console in the browser: the guest's login on its serial console, typed into.
    const link = await s.api.ok('POST', `service/${id}/console`);
    const origin = new URL(s.server.url).origin;
    const { page, problems } = await openPage(browser, origin);
    await page.goto(`${origin}${new URL(link.url).pathname}`);
    const screen = page.locator('.xterm-rows');
    const typing = page.locator('.xterm-helper-textarea');
    await typing.focus();
    const lastRow = async () =>
      (await screen.locator(':scope > div').allInnerTexts())
        .map((r) => r.trimEnd())
        .filter((r) => r !== '')
        .at(-1) ?? '';
    // Logs in from whatever the console shows (getty prints its prompt again on a new line; a
    // busy guest may take a while to ask for the password or start the shell), then types the
    // command until its output is on the screen. Each wait ends with the screen in the message.
    for (let i = 0; !(await screen.getByText('keys=1 host=self.example.com').count()); i++) {
      // A refused login ends the test at once ("bad salt": root has no usable hash), not at the
      // end of its time with getty asking again and again.
      const shown = await screen.innerText();
      assert.doesNotMatch(shown, /Login incorrect|bad salt/, `the order's password was refused:\n${shown}`);
      assert.ok(Date.now() < until, `the command's output never came:\n${shown}`);
      const row = await lastRow();
      if (/login:$/.test(row)) {
        await page.keyboard.type('root');
        await page.keyboard.press('Enter');
      } else if (/Password:$/.test(row)) {
        await page.keyboard.type(details.password);
        await page.keyboard.press('Enter');
      } else if (/#$/.test(row)) {
        await page.keyboard.type(
          'echo keys=$(grep -c ssh-ed25519 /root/.ssh/authorized_keys) host=$(hostname)',
        );
        await page.keyboard.press('Enter');
      } else {
        await page.keyboard.press('Enter');
      }
      await sleep(2000 + Math.min(i, 10) * 300);
    }
    assert.doesNotMatch(await screen.innerText(), /Login incorrect/, 'the order’s password logs in');
    // The domain's screen (VNC on a local socket), in noVNC on the page's second tab.
    await page.getByRole('tab', { name: 'Screen' }).click();
    await page.getByRole('status').filter({ hasText: 'Screen connected.' }).waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#pane-vnc canvas').count(), 1, 'noVNC draws the screen');
    assert.deepEqual(problems, []);
    await page.context().close();

    // Reinstall: a new system on a fresh disk, the new password (one that begins with "-": the
    // guest hashes it, and the boot line says `none` if root got no hash), the same addresses.
    await s.api.ok('POST', `service/${id}/reinstall`, {
      template_id: s.order.template_id,
      password: '-Reinstalled-pass-7',
      ssh_keys: [],
    });
    await settled(s, id, 'running', until);
    const [, second] = await reports(id, 2, until);
    assert.notEqual(second!['instance_id'], first!['instance_id'], 'a new cloud-init instance');
    assert.equal(second!['boot'], '1', 'a fresh disk: its boot counter starts again');
    assert.equal(second!['password_sha256'], sha256('-Reinstalled-pass-7'));
    assert.equal(second!['ips'], first!['ips'], 'the same addresses');
    assert.equal(second!['ssh_key_sha256'], '', 'ssh_keys [] removed the key');
    const afterReinstall = await s.api.ok('GET', `service/${id}/details`);
    assert.deepEqual(
      [afterReinstall.password, afterReinstall.ssh_key_fingerprints],
      ['-Reinstalled-pass-7', []],
    );

    // Rescue: the rescue system boots with the server's disk as its second disk.
    const login = await s.api.ok('POST', `service/${id}/rescue`);
    assert.equal(login.username, 'root');
    await settled(s, id, 'rescue', until);
    const [, , rescue] = await reports(id, 3, until);
    assert.equal(rescue!['password_sha256'], sha256(login.password), 'the rescue login');
    assert.match(rescue!['disks'] ?? '', /vdb:/, 'a second disk');
    assert.equal(
      rescue!['vdb_boots'],
      '1',
      'the second disk is the server’s own (booted once since the reinstall)',
    );
    assert.equal((await s.api.ok('GET', `service/${id}/details`)).status, 'rescue');

    await s.api.ok('POST', `service/${id}/unrescue`);
    await settled(s, id, 'running', until);
    const [, , , back] = await reports(id, 4, until);
    assert.equal(back!['hostname'], 'self.example.com');
    assert.equal(back!['boot'], '2', 'the server’s own disk, booted again');
    assert.equal(back!['password_sha256'], sha256('-Reinstalled-pass-7'));
  } finally {
    await browser.close();
    if (id) {
      await s.api.ok('POST', `service/${id}/terminate`).catch(() => {});
      await settled(s, id, 'terminated', Date.now() + slowWaitMs(300_000)).catch(() => {});
    }
  }
});
