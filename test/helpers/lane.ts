/**
 * Resources shared by the test files of one lane (scripts/test-lane.ts): made by the first file
 * that asks, ended by the lane after its last file. A file run on its own (`node --test FILE`)
 * is not in a lane: it gets its own, ended when it says it is done with it.
 */

/** Where a lane keeps what it ends after its last file: set by scripts/test-lane.ts. */
export const LANE_ENDINGS = Symbol.for('vrp.test.lane-endings');

const shared = new Map<string, Promise<unknown>>();

/**
 * The lane's `name` resource, made by `make` the first time; `release` is what a file calls
 * when done with it (nothing in a lane; outside one, `end` of its own).
 */
export async function laneResource<T>(
  name: string,
  make: () => Promise<T>,
  end: (r: T) => Promise<void>,
): Promise<{ resource: T; release(): Promise<void> }> {
  const endings = (globalThis as { [LANE_ENDINGS]?: (() => Promise<void>)[] })[LANE_ENDINGS];
  if (!endings) {
    const resource = await make();
    return { resource, release: () => end(resource) };
  }
  let made = shared.get(name) as Promise<T> | undefined;
  if (!made) {
    made = make();
    shared.set(name, made);
    endings.push(async () => {
      shared.delete(name);
      await end(await made!);
    });
    // A failed start is not kept: the next file tries again.
    made.catch(() => shared.delete(name));
  }
  return { resource: await made, release: async () => {} };
}
