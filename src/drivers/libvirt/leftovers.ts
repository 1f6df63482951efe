import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import { messageOf } from '../../domain/errors.ts';
import type { Database, LibvirtVmTable } from '../../store/schema.ts';
import { DriverError, type LeftoverPass } from '../driver.ts';

/**
 * How long a hold lasts without renewal. Whoever holds a leftover renews before each command of
 * its removal (each bounded by its own timeout), so a hold runs out only when its process died.
 */
const HOLD_MS = 15 * 60_000;
/** Leftovers removed per host per pass: a pass over a host with many stays bounded. */
const PER_PASS = 20;
/** `claimed_by` of a copy found running: left for the operator, and held so it is not re-checked every pass. */
const RUNNING = 'running';

export interface LeftoverDeps {
  readonly db: Kysely<Database>;
  readonly now: () => number;
  /** The VM's row, if it still exists. */
  row(vmId: string): Promise<LibvirtVmTable | undefined>;
  /** The VM's domain's state on a host. */
  state(vm: Pick<LibvirtVmTable, 'id' | 'host_id'>): Promise<'running' | 'stopped' | 'paused' | 'missing'>;
  /** Removes everything a host holds of the VM (its domain, its volumes, its QEMU log), `between` awaited before each command. */
  removeFrom(hostId: string, vmId: string, between?: () => Promise<void>): Promise<void>;
  readonly onLeftover?: ((l: { vmId: string; hostId: string; error: string }) => void) | undefined;
}

/** Not held, or held by a process whose hold ran out. */
const unheld = (t: number) => (eb: ExpressionBuilder<Database, 'libvirt_leftovers'>) =>
  eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', t)]);

/** A copy of the VM that runs on a host where the store does not place the VM. */
const runningCopy = (vmId: string, hostId: string) =>
  `A copy of VM ${vmId} runs on host ${hostId}, though the VM is not placed there (started outside the product): remove it there first`;

/**
 * A VM's copies that hosts hold though the VM is elsewhere (`libvirt_leftovers`): the source's
 * after a migration whose clean-up failed, a destination's after a failed migration that could
 * not clear it. The seed among them holds the password in clear, so none is forgotten: each is
 * recorded in the transaction that moves the VM off the host (or gives its reservation back), and
 * stays recorded until it is gone.
 *
 * Whoever removes one holds it first (`claimed_by`, `claimed_until`): a pass of the reconciler
 * over the host, or a create or migration that brings the VM to that host, which clears the old
 * copy before it looks there (otherwise it would find the old domain and take it for its own).
 * The holder renews before each command of the removal and stops once it has lost the hold; the
 * record goes only with the removal done, and only by its holder.
 */
export function createLeftovers(d: LeftoverDeps) {
  const { db } = d;
  const at = (hostId: string, vmId: string) =>
    db.selectFrom('libvirt_leftovers').where('host_id', '=', hostId).where('vm_id', '=', vmId);

  async function hold(hostId: string, vmId: string, by: string): Promise<boolean> {
    const t = d.now();
    const r = await db
      .updateTable('libvirt_leftovers')
      .set({ claimed_until: t + HOLD_MS, claimed_by: by })
      .where('host_id', '=', hostId)
      .where('vm_id', '=', vmId)
      .where(unheld(t))
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  /** Renews `by`'s hold; throws once another has it (or the record is gone). */
  function renewer(hostId: string, vmId: string, by: string) {
    return async () => {
      const r = await db
        .updateTable('libvirt_leftovers')
        .set({ claimed_until: d.now() + HOLD_MS })
        .where('host_id', '=', hostId)
        .where('vm_id', '=', vmId)
        .where('claimed_by', '=', by)
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n)
        throw new DriverError(`Lost the hold on VM ${vmId}'s old copy on host ${hostId}`, {
          transient: true,
        });
    };
  }

  const release = (hostId: string, vmId: string, by: string) =>
    db
      .updateTable('libvirt_leftovers')
      .set({ claimed_until: null, claimed_by: null })
      .where('host_id', '=', hostId)
      .where('vm_id', '=', vmId)
      .where('claimed_by', '=', by)
      .execute();

  const drop = (hostId: string, vmId: string, by: string) =>
    db
      .deleteFrom('libvirt_leftovers')
      .where('host_id', '=', hostId)
      .where('vm_id', '=', vmId)
      .where('claimed_by', '=', by)
      .execute();

  /**
   * Removes the held copy: never one that runs (it is marked so, held, and the error says why);
   * the record goes once the copy has.
   */
  async function removeHeld(hostId: string, vmId: string, by: string): Promise<void> {
    if ((await d.state({ id: vmId, host_id: hostId })) === 'running') {
      await db
        .updateTable('libvirt_leftovers')
        .set({ claimed_by: RUNNING })
        .where('host_id', '=', hostId)
        .where('vm_id', '=', vmId)
        .where('claimed_by', '=', by)
        .execute();
      throw new DriverError(runningCopy(vmId, hostId), { transient: false });
    }
    await d.removeFrom(hostId, vmId, renewer(hostId, vmId, by));
    await drop(hostId, vmId, by);
  }

  return {
    /** Records the VM's copy on the host, in the transaction that leaves it there. */
    async record(tx: Transaction<Database>, hostId: string, vmId: string): Promise<void> {
      await tx
        .insertInto('libvirt_leftovers')
        .values({ host_id: hostId, vm_id: vmId, since: d.now(), claimed_until: null, claimed_by: null })
        .onConflict((oc) => oc.columns(['host_id', 'vm_id']).doNothing())
        .execute();
    },

    /**
     * Removes the VM's copy from the host now (the source's, as a migration ends), as a pass
     * would; one that cannot be removed (or runs) stays recorded (reported through onLeftover)
     * for the passes.
     */
    async remove(hostId: string, vmId: string): Promise<void> {
      const by = `end-${randomUUID()}`;
      try {
        if (!(await hold(hostId, vmId, by))) return;
        await removeHeld(hostId, vmId, by);
      } catch (err) {
        await release(hostId, vmId, by).catch(() => {});
        d.onLeftover?.({ vmId, hostId, error: messageOf(err) });
      }
    },

    /**
     * Before the VM is placed on `hostId` or moved there (its room reserved), its old copy there,
     * if one is recorded, goes. One held by another (a pass removing it) makes this wait: a
     * transient error, the job tries again. One that runs is never removed: an error saying why
     * (transient for a create, which must not clean it up as its own; the caller decides).
     */
    async clearFor(hostId: string, vmId: string): Promise<void> {
      if (!(await at(hostId, vmId).select('vm_id').executeTakeFirst())) return;
      const by = `place-${randomUUID()}`;
      if (!(await hold(hostId, vmId, by))) {
        const held = await at(hostId, vmId).select('claimed_by').executeTakeFirst();
        if (!held) return;
        if (held.claimed_by === RUNNING)
          throw new DriverError(runningCopy(vmId, hostId), { transient: false });
        throw new DriverError(
          `The VM's old copy on host ${hostId} is being removed; this waits for it to go`,
          {
            transient: true,
          },
        );
      }
      try {
        await removeHeld(hostId, vmId, by);
      } catch (err) {
        await release(hostId, vmId, by).catch(() => {});
        throw err;
      }
    },

    /**
     * One pass over a host's leftovers (the reconciler's): each held while it is removed. A VM the
     * store places on this host, or is bringing here, is left to that placement (it clears the old
     * copy itself). A copy found running is left for the operator, held so that each pass does
     * not report it again until the hold runs out.
     */
    async clear(hostId: string): Promise<LeftoverPass> {
      const cleared: string[] = [];
      const failed: { vmId: string; error: string }[] = [];
      const rows = await db
        .selectFrom('libvirt_leftovers')
        .select('vm_id')
        .where('host_id', '=', hostId)
        .where(unheld(d.now()))
        .orderBy('since')
        .orderBy('vm_id')
        .limit(PER_PASS)
        .execute();
      for (const { vm_id: vmId } of rows) {
        const by = `pass-${randomUUID()}`;
        if (!(await hold(hostId, vmId, by))) continue;
        try {
          const vm = await d.row(vmId);
          if (vm && (vm.host_id === hostId || vm.migrating_to === hostId)) {
            await release(hostId, vmId, by);
            continue;
          }
          await removeHeld(hostId, vmId, by);
          cleared.push(vmId);
        } catch (err) {
          failed.push({ vmId, error: messageOf(err) });
          await release(hostId, vmId, by).catch(() => {});
        }
      }
      return { cleared, failed };
    },
  };
}

export type Leftovers = ReturnType<typeof createLeftovers>;
