/**
 * Ordering and numbers as text without the locale data of the Unicode library (ICU) that Node
 * carries in its binary. A process that formats one number for a locale (`toLocaleString`) or
 * compares two strings by one (`localeCompare`, `Intl.*`) pages in that data for good: 7.5 and
 * 2.9 MB of resident memory, each measured alone on Node 24 (bench/FINDINGS.md, "Locale data
 * kept out of the process"). The server's own paths use these instead; the browser's scripts of
 * the console are not the server's memory.
 */

/** Orders strings by their UTF-16 code units: the same order in every process, whatever its locale. */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A whole number with its thousands grouped by commas, as English writes them: 10,000. */
export function groupThousands(n: number): string {
  if (!Number.isSafeInteger(n)) throw new RangeError(`not a whole number: ${n}`);
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ',');
  return n < 0 ? `-${digits}` : digits;
}
