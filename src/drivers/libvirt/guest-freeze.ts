/**
 * A guest's file systems frozen through its QEMU guest agent for an instant (the point of a
 * live backup), and thawed again only once the agent says so. A freeze can outlive virsh's
 * wait (a guest with a slow disk: the agent completes it after virsh was ended) and the agent
 * may be busy when the thaw comes: a thaw that merely failed would leave the customer's server
 * hanging on every write. So each thaw is confirmed with `guest-fsfreeze-status`, and tried
 * again, with growing waits, until the agent says "thawed" or the time for it is over; then it
 * fails loudly.
 */
import { DriverError } from '../driver.ts';
import { unfenced } from '../fence.ts';
import type { CommandResult } from './commands.ts';

/** A virsh call on one host's connection (commands.ts). */
export type Virsh = (
  uri: string,
  args: readonly string[],
  what: string,
  timeoutMs?: number,
) => Promise<CommandResult>;

export interface GuestFreezeOptions {
  readonly virsh: Virsh;
  /** How long a thaw goes on until the agent confirms it, ms (default 5 minutes). */
  readonly thawWithinMs?: number;
  /** Told of a thaw that failed while the work between freeze and thaw had failed itself (its error is the one thrown). */
  readonly onThawFailed?: (domain: string, err: unknown) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

export interface GuestFreeze {
  /**
   * Freezes the guest's file systems if its agent answers; true if a freeze was asked (a thaw
   * is owed, whatever happens). A guest found frozen (left so by an attempt that died) is
   * thawed first.
   */
  freeze(uri: string, domain: string): Promise<boolean>;
  /** Thaws until the agent confirms; throws (not transient) if it never does. */
  thaw(uri: string, domain: string): Promise<void>;
  /**
   * Thaws a guest its agent says is frozen (left so by an attempt that died), as `thaw` does;
   * true if it was. A guest without an answering agent is left as it is.
   */
  thawIfFrozen(uri: string, domain: string): Promise<boolean>;
  /** `work` with the guest frozen (if its agent answers), thawed after it whatever happens. */
  frozenDuring<T>(uri: string, domain: string, work: () => Promise<T>): Promise<T>;
}

/** The default of `thawWithinMs`. */
export const THAW_WITHIN_MS = 5 * 60_000;
/** The first wait between two thaws; each next one is twice as long, up to the cap. */
const FIRST_WAIT_MS = 1000;
const WAIT_CAP_MS = 30_000;
/** How long virsh gets for an agent command (the agent itself gets `--timeout 5`). */
const AGENT_CALL_MS = 20_000;
/** How long virsh gets for a freeze or a thaw. */
const FREEZE_CALL_MS = 30_000;

export function createGuestFreeze(o: GuestFreezeOptions): GuestFreeze {
  const { virsh } = o;
  const within = o.thawWithinMs ?? THAW_WITHIN_MS;
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  /** The agent's answer to a command, or undefined if it gave none. */
  async function agent(uri: string, domain: string, command: string): Promise<string | undefined> {
    const r = await virsh(
      uri,
      ['qemu-agent-command', '--timeout', '5', domain, JSON.stringify({ execute: command })],
      'Could not reach the guest agent',
      AGENT_CALL_MS,
    ).catch(() => undefined);
    return r?.stdout;
  }

  /** "frozen" or "thawed" as the agent says, undefined if it does not answer. */
  async function status(uri: string, domain: string): Promise<'frozen' | 'thawed' | undefined> {
    const out = await agent(uri, domain, 'guest-fsfreeze-status');
    const said = /"return"\s*:\s*"(frozen|thawed)"/.exec(out ?? '')?.[1];
    return said === 'frozen' || said === 'thawed' ? said : undefined;
  }

  async function freeze(uri: string, domain: string): Promise<boolean> {
    // A quick ping first: an agent that is not there or does not answer means no freeze.
    if (!/"return"/.test((await agent(uri, domain, 'guest-ping')) ?? '')) return false;
    const before = await status(uri, domain);
    // An agent that cannot say whether the guest is frozen could not confirm a thaw: no freeze.
    if (before === undefined) return false;
    if (before === 'frozen') await thaw(uri, domain);
    await virsh(
      uri,
      ['domfsfreeze', domain],
      'Could not freeze the guest file systems',
      FREEZE_CALL_MS,
    ).catch(() => {});
    return true;
  }

  /**
   * Outside the attempt's fence (fence.ts): an attempt whose lease ran out takes no further step,
   * but a guest it froze is thawed all the same. Left frozen, the customer's server would hang on
   * every write until the job's next run.
   */
  function thaw(uri: string, domain: string): Promise<void> {
    return unfenced(() => thawConfirmed(uri, domain));
  }

  async function thawConfirmed(uri: string, domain: string): Promise<void> {
    const until = now() + within;
    let wait = FIRST_WAIT_MS;
    let last = '';
    for (;;) {
      // A failed thaw (the agent busy, the guest thawed already) is no answer: the status is.
      await virsh(uri, ['domfsthaw', domain], 'Could not thaw the guest file systems', FREEZE_CALL_MS).catch(
        () => {},
      );
      const s = await status(uri, domain);
      if (s === 'thawed') return;
      last = s ?? 'no answer';
      const left = until - now();
      if (left <= 0) break;
      await sleep(Math.min(wait, left));
      wait = Math.min(wait * 2, WAIT_CAP_MS);
    }
    throw new DriverError(
      `The guest's file systems may still be frozen: its agent did not confirm the thaw within ${Math.round(within / 1000)} s (last status: ${last}); an operator should run \`virsh domfsthaw ${domain}\` on its host`,
      { transient: false },
    );
  }

  async function thawIfFrozen(uri: string, domain: string): Promise<boolean> {
    if ((await status(uri, domain)) !== 'frozen') return false;
    await thaw(uri, domain);
    return true;
  }

  async function frozenDuring<T>(uri: string, domain: string, work: () => Promise<T>): Promise<T> {
    if (!(await freeze(uri, domain))) return work();
    let result: T;
    try {
      result = await work();
    } catch (err) {
      // The work's own error is the one that counts; the thaw's failure is told apart.
      await thaw(uri, domain).catch((thawErr: unknown) => o.onThawFailed?.(domain, thawErr));
      throw err;
    }
    await thaw(uri, domain);
    return result;
  }

  return { freeze, thaw, thawIfFrozen, frozenDuring };
}
