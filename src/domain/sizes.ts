/**
 * Sizes in GB that are not whole (backups are measured to a tenth of a GB) are summed here,
 * in whole hundredths, so that 2.8 + 2.8 is 5.6 and not 5.599999999999999: binary floating
 * point cannot hold most tenths, and the error of each addition would otherwise show in
 * totals and in comparisons against a quota or a host's capacity.
 */

/** Sizes are kept to this many parts of a GB (hundredths: 10 MB). */
export const GB_PARTS = 100;

/** `gb` to the nearest hundredth of a GB. */
export function roundGb(gb: number): number {
  return Math.round(gb * GB_PARTS) / GB_PARTS;
}

/** The sum of sizes in GB, to the hundredth (each size rounded to it first, then summed exactly). */
export function sumGb(sizes: Iterable<number>): number {
  let parts = 0;
  for (const gb of sizes) parts += Math.round(gb * GB_PARTS);
  return parts / GB_PARTS;
}

const GIB = 1024 ** 3;

/**
 * What a backup counts against its service's `backup` GB: the bytes it occupies in the backup
 * store, in GB (GiB), rounded up to a tenth, at least a tenth. The one rule for a backup's
 * `size_gb`, so quotas and rotation count what the store holds.
 */
export function storedSizeGb(storedBytes: number): number {
  return Math.max(0.1, Math.ceil((storedBytes / GIB) * 10) / 10);
}
