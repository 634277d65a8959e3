// A Prometheus histogram whose series are all known when it is made (the delta-latency histograms:
// one series without labels, or one per value of a single label). prom-client's Histogram validates
// and hashes the labels on every observe, a `labels()` child included, and keys its buckets by the
// bound's string: ~40 µs per delta on the relay's main thread for the three observations made per
// delta (BENCHMARKS.md, delta-cost and delta-path). Here a series is picked once, and observing is a
// search of the bounds and three additions. The registry renders it as it renders a prom-client
// Histogram holding the same observations (the same lines: a labelled series appears once it has been
// observed, the unlabelled one at once; labelled series in the order declared, where prom-client's
// come in the order first observed), test/metrics/fixed-histogram.test.ts.
import type { Metric } from 'prom-client';

/** One series of a FixedHistogram: what the hot path holds and observes into. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative), the last one above every bound (+Inf). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    /** Its label, `{}` for the unlabelled series. */
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i += 1;
    this.counts[i] += 1;
    this.sum += value;
    this.count += 1;
  }
}

interface RenderedValue {
  value: number;
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  metricName: string;
  exemplar?: null;
}

export interface FixedHistogramOptions {
  name: string;
  help: string;
  /** Upper bounds, increasing (the +Inf bucket is implied). */
  buckets: readonly number[];
  /** One label and every value it takes; none: a single unlabelled series. */
  label?: { name: string; values: readonly string[] };
}

export class FixedHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  /** How prom-client's cluster aggregation would merge it (a Histogram's). */
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly byValue = new Map<string | undefined, HistogramSeries>();
  private readonly labelled: boolean;

  constructor(options: FixedHistogramOptions) {
    const { name, help, buckets, label } = options;
    if (buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]))) throw new RangeError(`${name}: buckets must be finite and increasing`);
    this.name = name;
    this.help = help;
    this.bounds = [...buckets];
    this.labelled = label !== undefined;
    if (label) for (const value of label.values) this.byValue.set(value, new HistogramSeries(this.bounds, { [label.name]: value }));
    else this.byValue.set(undefined, new HistogramSeries(this.bounds, {}));
  }

  /** The series of `labelValue` (none for an unlabelled histogram); throws for a value not declared. */
  series(labelValue?: string): HistogramSeries {
    const series = this.byValue.get(labelValue);
    if (!series) throw new RangeError(`${this.name}: no series for label value ${String(labelValue)}`);
    return series;
  }

  /** This histogram as a metric of prom-client's registry, which renders any metric through get(). */
  asMetric(): Metric {
    return this as unknown as Metric;
  }

  /** prom-client's form for the text exposition: bucket labels apart from the series' own. */
  getForPromString(): Promise<{ name: string; help: string; type: string; values: RenderedValue[]; aggregator: string }> {
    const values: RenderedValue[] = [];
    for (const series of this.byValue.values()) {
      if (this.labelled && series.count === 0) continue;
      const sharedLabels = { ...series.labels };
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i];
        values.push({ labels: { le: bound }, sharedLabels, value: cumulative, metricName: `${this.name}_bucket`, exemplar: null });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels, value: series.count, metricName: `${this.name}_bucket`, exemplar: null },
        { labels: {}, sharedLabels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** prom-client's form for getMetricsAsJSON: every label of a value in `labels`. */
  async get(): Promise<{ name: string; help: string; type: string; values: Omit<RenderedValue, 'sharedLabels'>[]; aggregator: string }> {
    const data = await this.getForPromString();
    const values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return { ...data, values };
  }

  /** Registry.resetMetrics(): every series back to zero. */
  reset(): void {
    for (const series of this.byValue.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
