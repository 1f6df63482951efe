import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import type { Database, LibvirtVmTable } from '../../store/schema.ts';
import { DriverError, type LeftoverPass } from '../driver.ts';

/** How long a pass holds a leftover it removes: past every command's timeout, for a dead process's hold to run out. */
const CLAIM_MS = 15 * 60_000;
/** Leftovers removed per host per pass: a pass over a host with many stays bounded. */
const PER_PASS = 20;

export interface LeftoverDeps {
  readonly db: Kysely<Database>;
  readonly now: () => number;
  /** The VM's row, if it still exists. */
  row(vmId: string): Promise<LibvirtVmTable | undefined>;
  /** The VM's domain's state on a host. */
  state(vm: Pick<LibvirtVmTable, 'id' | 'host_id'>): Promise<'running' | 'stopped' | 'paused' | 'missing'>;
  /** Removes everything a host holds of the VM (its domain, its volumes, its QEMU log). */
  removeFrom(hostId: string, vmId: string): Promise<void>;
  readonly onLeftover?: ((l: { vmId: string; hostId: string; error: string }) => void) | undefined;
}

/** Not held by a pass, or held by one whose hold ran out. */
const unheld = (t: number) => (eb: ExpressionBuilder<Database, 'libvirt_leftovers'>) =>
  eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', t)]);

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * A VM's copies that hosts hold though the VM is elsewhere (`libvirt_leftovers`): the source's
 * after a migration whose clean-up failed, a destination's after a failed migration it did not
 * answer for. The seed among them holds the password in clear, so none is forgotten: each is
 * recorded in the transaction that moves the VM off the host (or gives its reservation back),
 * and stays recorded until it is gone.
 */
export function createLeftovers(d: LeftoverDeps) {
  const { db } = d;
  const where = (hostId: string, vmId: string) =>
    db.deleteFrom('libvirt_leftovers').where('host_id', '=', hostId).where('vm_id', '=', vmId);

  return {
    /** Records the VM's copy on the host, in the transaction that leaves it there. */
    async record(tx: Transaction<Database>, hostId: string, vmId: string): Promise<void> {
      await tx
        .insertInto('libvirt_leftovers')
        .values({ host_id: hostId, vm_id: vmId, since: d.now(), claimed_until: null })
        .onConflict((oc) => oc.columns(['host_id', 'vm_id']).doNothing())
        .execute();
    },

    /**
     * A migration's reservation of `hostId` for the VM takes its leftover there over (the move
     * clears the destination of the VM's old files first). One a pass is removing right now
     * makes the reservation wait: transient, so the job tries again.
     */
    async takeOver(tx: Transaction<Database>, hostId: string, vmId: string): Promise<void> {
      const t = d.now();
      await tx
        .deleteFrom('libvirt_leftovers')
        .where('host_id', '=', hostId)
        .where('vm_id', '=', vmId)
        .where(unheld(t))
        .execute();
      const held = await tx
        .selectFrom('libvirt_leftovers')
        .select('vm_id')
        .where('host_id', '=', hostId)
        .where('vm_id', '=', vmId)
        .executeTakeFirst();
      if (held)
        throw new DriverError(
          `The VM's old copy on host ${hostId} is being removed; the migration waits for it to go`,
          { transient: true },
        );
    },

    /**
     * Removes the VM's copy from the host now (the end of a migration); one that cannot be
     * removed stays recorded (reported through onLeftover). One a pass holds is left to it.
     */
    async remove(hostId: string, vmId: string): Promise<void> {
      try {
        await d.removeFrom(hostId, vmId);
      } catch (err) {
        d.onLeftover?.({ vmId, hostId, error: messageOf(err) });
        return;
      }
      await where(hostId, vmId).where('claimed_until', 'is', null).execute();
    },

    /**
     * One pass over a host's leftovers (the reconciler's, under its hold on the host): each is
     * held while it is removed. A copy found running is never removed: the store says the VM is
     * elsewhere, so something outside the product started it; it is reported and left for the
     * operator, held until its hold runs out so that each pass does not report it again.
     */
    async clear(hostId: string): Promise<LeftoverPass> {
      const cleared: string[] = [];
      const failed: { vmId: string; error: string }[] = [];
      const t0 = d.now();
      const rows = await db
        .selectFrom('libvirt_leftovers')
        .select('vm_id')
        .where('host_id', '=', hostId)
        .where(unheld(t0))
        .orderBy('since')
        .orderBy('vm_id')
        .limit(PER_PASS)
        .execute();
      for (const { vm_id: vmId } of rows) {
        const t = d.now();
        const held = await db
          .updateTable('libvirt_leftovers')
          .set({ claimed_until: t + CLAIM_MS })
          .where('host_id', '=', hostId)
          .where('vm_id', '=', vmId)
          .where(unheld(t))
          .executeTakeFirst();
        if (held.numUpdatedRows === 0n) continue;
        let release = true;
        try {
          const vm = await d.row(vmId);
          // The VM is on this host again, or on its way (a stale record): nothing to remove.
          if (!(vm && (vm.host_id === hostId || vm.migrating_to === hostId))) {
            if ((await d.state({ id: vmId, host_id: hostId })) === 'running') {
              release = false;
              throw new DriverError(
                `A copy of VM ${vmId} runs on host ${hostId}, though the VM is not placed there: left for the operator`,
                { transient: false },
              );
            }
            await d.removeFrom(hostId, vmId);
          }
          await where(hostId, vmId).execute();
          cleared.push(vmId);
        } catch (err) {
          failed.push({ vmId, error: messageOf(err) });
          if (release)
            await db
              .updateTable('libvirt_leftovers')
              .set({ claimed_until: null })
              .where('host_id', '=', hostId)
              .where('vm_id', '=', vmId)
              .execute();
        }
      }
      return { cleared, failed };
    },
  };
}

export type Leftovers = ReturnType<typeof createLeftovers>;
