import type { Metric, Registry } from 'prom-client';

/** One series of a RequestHistogram: what an answer's route observes. */
export interface HistogramSeries {
  /** Counts one observation of `seconds` (a finite number). */
  observe(seconds: number): void;
}

/** A sample as prom-client's registry exposes it (the shape its own histograms give). */
interface Sample {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

class Series<L extends string> implements HistogramSeries {
  /** Per bucket, not cumulative; the last one is above every bound (+Inf's own). */
  readonly counts: Float64Array;
  sum = 0;

  readonly labels: Readonly<Record<L, string>>;
  readonly #bounds: readonly number[];

  constructor(labels: Readonly<Record<L, string>>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** The observations counted: every bucket's, +Inf's included. */
  get count(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return n;
  }

  zero(): void {
    this.counts.fill(0);
    this.sum = 0;
  }

  observe(seconds: number): void {
    if (!Number.isFinite(seconds)) throw new TypeError(`Value is not a valid number: ${seconds}`);
    let i = 0;
    for (const bound of this.#bounds) {
      if (seconds <= bound) break;
      i++;
    }
    this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.sum += seconds;
  }
}

/**
 * A histogram of the request path, exposed by prom-client's registry as its own histograms are
 * (`_bucket` per bound, cumulative, and `+Inf`, `_sum`, `_count`, each with the series' labels),
 * whose series are bound once: an observation finds its bucket and adds to three numbers.
 * prom-client's labelled child checks its labels, builds a key from their values and looks the
 * series up by it on every observation, which was a twentieth of a request's CPU on GET version
 * (bench/FINDINGS.md, "The request histogram's series bound once"). Everything but the
 * observation stays prom-client's: the registry, the exposition format, the content type.
 */
export class RequestHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly #labelNames: readonly L[];
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series<L>>();

  constructor(
    name: string,
    help: string,
    labelNames: readonly L[],
    bounds: readonly number[],
    registry: Registry,
  ) {
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
    this.#bounds = bounds;
    let previous = Number.NEGATIVE_INFINITY;
    for (const bound of bounds) {
      if (!Number.isFinite(bound) || bound <= previous) {
        throw new Error(`${name}: bounds must be finite and increasing`);
      }
      previous = bound;
    }
    // The registry takes any metric that answers get() and reset(); its typing names only its own classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values (in `labelNames` order), made on first use. */
  series(...values: readonly string[]): HistogramSeries {
    if (values.length !== this.#labelNames.length) {
      throw new Error(`${this.name}: ${this.#labelNames.length} label values expected, got ${values.length}`);
    }
    const key = JSON.stringify(values);
    let series = this.#series.get(key);
    if (!series) {
      series = new Series(
        Object.fromEntries(this.#labelNames.map((n, i) => [n, values[i] ?? ''])),
        this.#bounds,
      );
      this.#series.set(key, series);
    }
    return series;
  }

  /** Each series observed since the last reset, with its count of observations. */
  *counts(): Iterable<{ readonly labels: Readonly<Record<L, string>>; readonly count: number }> {
    for (const s of this.#series.values()) {
      const count = s.count;
      if (count > 0) yield { labels: s.labels, count };
    }
  }

  /** The samples of every series, as the registry exposes them. */
  async get(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    aggregator: 'sum';
    values: Sample[];
  }> {
    const values: Sample[] = [];
    for (const s of this.#series.values()) {
      const count = s.count;
      if (count === 0) continue;
      let cumulative = 0;
      for (const [i, le] of this.#bounds.entries()) {
        cumulative += s.counts[i] ?? 0;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
      }
      values.push(
        { metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: count },
        { metricName: `${this.name}_sum`, labels: s.labels, value: s.sum },
        { metricName: `${this.name}_count`, labels: s.labels, value: count },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /**
   * Counts every series from zero again (the registry's resetMetrics), as prom-client's own
   * reset does: a series shows again once it is next observed. The series stay bound.
   */
  reset(): void {
    for (const s of this.#series.values()) s.zero();
  }
}
