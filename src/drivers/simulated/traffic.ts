import type { Kysely } from 'kysely';
import type { Database, SimVmTable } from '../../store/schema.ts';
import type { InterfaceCounters } from '../driver.ts';

/** Bytes per second a running simulated VM receives and sends (VRP_SIM_TRAFFIC_RATE). */
export interface TrafficRate {
  readonly inPerSecond: number;
  readonly outPerSecond: number;
}

export const NO_TRAFFIC: TrafficRate = { inPerSecond: 0, outPerSecond: 0 };

type CounterColumns = Pick<
  SimVmTable,
  'boot_count' | 'host_id' | 'updated_at' | 'traffic_in' | 'traffic_out' | 'traffic_at' | 'traffic_session'
>;

/**
 * The life of a simulated VM's counters: its boot and its host. A boot or a migration starts a
 * new one, as a real VM's interfaces are created anew then.
 */
export const trafficSession = (vm: Pick<SimVmTable, 'boot_count' | 'host_id'>) =>
  `${vm.boot_count}@${vm.host_id}`;

/**
 * What the stored counters stand for now: those of the current session, or zero as of the VM's
 * last change (its boot or its move) when they belong to an earlier one.
 */
function base(vm: CounterColumns): { inBytes: number; outBytes: number; at: number; session: string } {
  const session = trafficSession(vm);
  if (vm.traffic_session === session)
    return { inBytes: vm.traffic_in, outBytes: vm.traffic_out, at: vm.traffic_at, session };
  return { inBytes: 0, outBytes: 0, at: vm.updated_at, session };
}

/** A running VM's counters at `now`: what was added to them, plus `rate` for the time since. */
export function countersAt(vm: CounterColumns, rate: TrafficRate, now: number): InterfaceCounters {
  const b = base(vm);
  const seconds = Math.max(0, now - b.at) / 1000;
  return {
    inBytes: b.inBytes + Math.floor(rate.inPerSecond * seconds),
    outBytes: b.outBytes + Math.floor(rate.outPerSecond * seconds),
    session: b.session,
  };
}

/**
 * Traffic through a simulated VM's interface (what tests and demos make it receive and send):
 * adds the bytes to its counters. False when the VM does not exist.
 */
export async function addTraffic(
  db: Kysely<Database>,
  vmId: string,
  inBytes: number,
  outBytes: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const vm = await tx.selectFrom('sim_vms').selectAll().where('id', '=', vmId).executeTakeFirst();
    if (!vm) return false;
    const b = base(vm);
    await tx
      .updateTable('sim_vms')
      .set({
        traffic_in: b.inBytes + inBytes,
        traffic_out: b.outBytes + outBytes,
        traffic_at: b.at,
        traffic_session: b.session,
      })
      .where('id', '=', vmId)
      .execute();
    return true;
  });
}
