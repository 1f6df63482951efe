/** The headline figures of bench/run.ts's output, as bench/against.ts sets them side by side. */

/** A line bench/run.ts prints for a scenario's result, on either store. */
export const SCENARIO_LINE = /^(SQLite|PostgreSQL)\b/;

/** A scenario's headline figures, from the line bench/run.ts prints for it. */
export interface Figures {
  readonly scenario: string;
  readonly rate?: string;
  readonly cpu?: string;
}

/** The scenario lines of one bench run (`<scenario>: <number>...`), their figures. */
export function figuresOf(output: string): Figures[] {
  const out: Figures[] = [];
  for (const line of output.split('\n')) {
    if (!SCENARIO_LINE.test(line)) continue;
    const head = /^(.*?): \d/.exec(line);
    if (!head) continue;
    const services = / (\d+) services\/s/.exec(line)?.[1];
    const ratio = /, ratio ([\d.]+)/.exec(line)?.[1];
    const perService = /server CPU (\d+) µs per service/.exec(line)?.[1];
    const perRequest = /user\+sys: server (\d+)\+(\d+)/.exec(line);
    // The peak RSS under the status load: `<store>: peak RSS under status load: 166 MB`.
    const rss = /: (\d+) MB$/.exec(line)?.[1];
    // A store's growth (the operator's lists): `(two servers loaded in turn: 1713 vs 940 req/s): slowdown 1.823x`.
    const slowdown = /loaded in turn: (\d+) vs (\d+) req\/s\): slowdown ([\d.]+x)/.exec(line);
    out.push({
      scenario: head[1]!,
      rate: services
        ? `${services}/s`
        : (ratio ??
          (rss
            ? `${rss} MB`
            : slowdown
              ? `${slowdown[3]} (${slowdown[1]} vs ${slowdown[2]} req/s)`
              : undefined)),
      cpu: perService ?? (perRequest ? String(Number(perRequest[1]) + Number(perRequest[2])) : undefined),
    });
  }
  return out;
}
