/**
 * The freeze and thaw of a guest's file systems around a live backup (guest-freeze.ts), against
 * a scripted virsh: a guest agent as a small state machine (frozen or thawed, busy or not,
 * answering or not) and a clock that moves only when a command takes its time or a wait is slept.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { checkFence, FenceDown, fenced } from '../../src/drivers/fence.ts';
import type { CommandResult } from '../../src/drivers/libvirt/commands.ts';
import { createGuestFreeze, type GuestFreezeOptions } from '../../src/drivers/libvirt/guest-freeze.ts';

const URI = 'qemu+ssh://host-a/system';
const DOMAIN = 'vrp-0193f000-0000-7000-8000-000000000001';

interface AgentScript {
  /** No agent in the guest: every agent command fails, as virsh says then. */
  readonly absent?: boolean;
  /** The guest is frozen already (an attempt that died left it so). */
  readonly frozen?: boolean;
  /** `domfsfreeze` outlives virsh's time limit: virsh is killed, the agent completes the freeze afterwards. */
  readonly slowFreeze?: boolean;
  /** How many `domfsthaw`s fail with the agent busy before one goes through. */
  readonly busyThaws?: number;
  /** From which status request on the agent answers none (it stopped answering). */
  readonly silentFrom?: number;
  /** The thaw never takes: the agent says "frozen" whatever is asked. */
  readonly stuck?: boolean;
}

function failure(command: string, stderr: string, transient: boolean): DriverError {
  return new DriverError('Could not run virsh', {
    transient,
    details: { command, exitCode: transient ? null : 1, signal: transient ? 'SIGTERM' : null, stderr },
  });
}

/** A virsh that runs the agent of `script`, with the log of what was asked and a virtual clock. */
function scripted(script: AgentScript, extra: Partial<GuestFreezeOptions> = {}) {
  let clock = 0;
  let frozen = script.frozen ?? false;
  let busy = script.busyThaws ?? 0;
  let statuses = 0;
  const commands: string[] = [];
  const sleeps: number[] = [];
  const virsh = async (
    _uri: string,
    args: readonly string[],
    _what: string,
    timeoutMs = 120_000,
  ): Promise<CommandResult> => {
    const line = args[0] === 'qemu-agent-command' ? `agent ${JSON.parse(args[4] ?? '').execute}` : args[0];
    commands.push(line ?? '');
    clock += 10;
    if (script.absent)
      throw failure(
        line ?? '',
        'error: Guest agent is not responding: QEMU guest agent is not connected',
        false,
      );
    switch (line) {
      case 'agent guest-ping':
        return { stdout: '{"return":{}}\n', stderr: '' };
      case 'agent guest-fsfreeze-status': {
        statuses++;
        if (script.silentFrom !== undefined && statuses >= script.silentFrom) {
          clock += 5000;
          throw failure(
            line,
            'error: Guest agent is not responding: Guest agent not available for now',
            false,
          );
        }
        return { stdout: `{"return":"${frozen ? 'frozen' : 'thawed'}"}\n`, stderr: '' };
      }
      case 'domfsfreeze':
        frozen = true;
        if (script.slowFreeze) {
          clock += timeoutMs;
          throw failure(line, '', true);
        }
        return { stdout: 'Froze 1 filesystem(s)\n', stderr: '' };
      case 'domfsthaw':
        if (busy > 0) {
          busy--;
          throw failure(
            line,
            'error: Timed out during operation: cannot acquire state change lock (held by monitor=remoteDispatchDomainFsfreeze)',
            true,
          );
        }
        if (!frozen)
          throw failure(
            line,
            'error: internal error: unable to execute QEMU agent command: not frozen',
            false,
          );
        if (!script.stuck) frozen = false;
        return { stdout: 'Thawed 1 filesystem(s)\n', stderr: '' };
      default:
        throw new Error(`unexpected command ${line}`);
    }
  };
  const guest = createGuestFreeze({
    virsh,
    now: () => clock,
    sleep: async (ms) => {
      sleeps.push(ms);
      clock += ms;
    },
    ...extra,
  });
  return { guest, virsh, commands, sleeps, isFrozen: () => frozen, clock: () => clock };
}

test('a freeze that outlives virsh and an agent busy at first: the thaw goes on until the agent says "thawed"', async () => {
  const h = scripted({ slowFreeze: true, busyThaws: 3 });
  let frozenAtWork: boolean | undefined;
  const r = await h.guest.frozenDuring(URI, DOMAIN, async () => {
    frozenAtWork = h.isFrozen();
    return 'began';
  });
  assert.equal(r, 'began');
  assert.equal(frozenAtWork, true);
  assert.equal(h.isFrozen(), false, 'the guest is thawed');
  assert.deepEqual(h.commands, [
    'agent guest-ping',
    'agent guest-fsfreeze-status',
    'domfsfreeze',
    // Three thaws the busy agent refuses, each followed by the status it is judged by.
    'domfsthaw',
    'agent guest-fsfreeze-status',
    'domfsthaw',
    'agent guest-fsfreeze-status',
    'domfsthaw',
    'agent guest-fsfreeze-status',
    'domfsthaw',
    'agent guest-fsfreeze-status',
  ]);
  assert.deepEqual(h.sleeps, [1000, 2000, 4000], 'growing waits between the thaws');
});

test('an agent that never confirms the thaw: after the bound, a clear error that is not retried', async () => {
  for (const script of [
    { stuck: true },
    // The agent answers the status before the freeze, then no more.
    { silentFrom: 2, busyThaws: 1000 },
  ] satisfies AgentScript[]) {
    const h = scripted(script, { thawWithinMs: 60_000 });
    assert.equal(await h.guest.freeze(URI, DOMAIN), true);
    const err = await h.guest.thaw(URI, DOMAIN).catch((e: unknown) => e);
    assert.ok(err instanceof DriverError, JSON.stringify(script));
    assert.equal(err.transient, false);
    assert.match(err.message, /file systems may still be frozen/);
    assert.ok(err.message.includes(`virsh domfsthaw ${DOMAIN}`), err.message);
    assert.ok(h.isFrozen());
    // Waits of 1, 2, 4, 8, 16, 29 s (the rest of the minute), then a last thaw and status.
    assert.deepEqual(h.sleeps.slice(0, 5), [1000, 2000, 4000, 8000, 16_000]);
    assert.ok(h.sleeps.every((ms) => ms <= 30_000));
    assert.ok(h.clock() >= 60_000 && h.clock() < 60_000 + 40_000, `gave up at ${h.clock()} ms`);
    assert.equal(h.commands.at(-2), 'domfsthaw');
  }
});

test('a guest found frozen (an attempt that died) is thawed, with confirmation, before the freeze', async () => {
  const h = scripted({ frozen: true });
  assert.equal(await h.guest.freeze(URI, DOMAIN), true);
  assert.deepEqual(h.commands, [
    'agent guest-ping',
    'agent guest-fsfreeze-status',
    'domfsthaw',
    'agent guest-fsfreeze-status',
    'domfsfreeze',
  ]);
  await h.guest.thaw(URI, DOMAIN);
  assert.equal(h.isFrozen(), false);

  // One that cannot be thawed: the attempt fails before it freezes anything.
  const stuck = scripted({ frozen: true, stuck: true }, { thawWithinMs: 5000 });
  await assert.rejects(stuck.guest.freeze(URI, DOMAIN), /may still be frozen/);
  assert.ok(!stuck.commands.includes('domfsfreeze'));
});

test('no agent, or one that cannot tell its freeze status: no freeze and no thaw', async () => {
  for (const script of [{ absent: true }, { silentFrom: 1 }] satisfies AgentScript[]) {
    const h = scripted(script);
    let ran = false;
    await h.guest.frozenDuring(URI, DOMAIN, async () => {
      ran = true;
    });
    assert.ok(ran);
    assert.ok(!h.commands.some((c) => c === 'domfsfreeze' || c === 'domfsthaw'), h.commands.join(', '));
    assert.deepEqual(h.sleeps, []);
  }
});

test("a thaw that fails after the work failed is told, and the work's error is the one thrown", async () => {
  const told: [string, unknown][] = [];
  const h = scripted(
    { stuck: true },
    { thawWithinMs: 3000, onThawFailed: (domain, err) => told.push([domain, err]) },
  );
  const backup = new DriverError('Could not start the backup', { transient: true });
  await assert.rejects(
    h.guest.frozenDuring(URI, DOMAIN, () => Promise.reject(backup)),
    (err) => err === backup,
  );
  assert.equal(told.length, 1);
  const [domain, thawErr] = told[0] ?? [];
  assert.equal(domain, DOMAIN);
  assert.ok(thawErr instanceof DriverError && /may still be frozen/.test(thawErr.message));

  // The work succeeded: the thaw's failure is the error.
  const ok = scripted({ stuck: true }, { thawWithinMs: 3000 });
  await assert.rejects(
    ok.guest.frozenDuring(URI, DOMAIN, async () => 'began'),
    (err) => err instanceof DriverError && !err.transient && /may still be frozen/.test(err.message),
  );
});

test('after a backup given up, a guest left frozen is thawed with confirmation; a thawed one or one without an agent is left as it is', async () => {
  const frozen = scripted({ frozen: true, busyThaws: 1 });
  assert.equal(await frozen.guest.thawIfFrozen(URI, DOMAIN), true);
  assert.equal(frozen.isFrozen(), false, 'the guest is thawed');
  assert.deepEqual(frozen.commands, [
    'agent guest-fsfreeze-status',
    'domfsthaw',
    'agent guest-fsfreeze-status',
    'domfsthaw',
    'agent guest-fsfreeze-status',
  ]);

  const thawed = scripted({});
  assert.equal(await thawed.guest.thawIfFrozen(URI, DOMAIN), false);
  assert.deepEqual(thawed.commands, ['agent guest-fsfreeze-status'], 'no thaw asked');

  const absent = scripted({ absent: true });
  assert.equal(await absent.guest.thawIfFrozen(URI, DOMAIN), false);

  const stuck = scripted({ frozen: true, stuck: true });
  await assert.rejects(stuck.guest.thawIfFrozen(URI, DOMAIN), /an operator should run `virsh domfsthaw/);
});

test('a backup attempt whose lease runs out while the guest is frozen takes no further step, but thaws the guest', async () => {
  const abort = new AbortController();
  const fence = { signal: abort.signal, check: () => abort.signal.throwIfAborted() };
  // Each command checks the attempt's fence, as the driver's commands do (commands.ts).
  const h = scripted({});
  let waited = 0;
  const fencedGuest = createGuestFreeze({
    virsh: async (...args) => {
      checkFence();
      return h.virsh(...args);
    },
    // A clock of its own that the waits move (a refused command moves none).
    now: () => waited,
    sleep: async (ms) => {
      waited += ms;
    },
    thawWithinMs: 60_000,
  });
  const err = await fenced(fence, () =>
    fencedGuest.frozenDuring(URI, DOMAIN, async () => {
      abort.abort(new FenceDown());
      checkFence();
    }),
  ).catch((e: unknown) => e);
  assert.ok(err instanceof FenceDown, String(err));
  assert.equal(h.isFrozen(), false, 'the guest is thawed');
  assert.deepEqual(h.commands.slice(-2), ['domfsthaw', 'agent guest-fsfreeze-status']);
});
