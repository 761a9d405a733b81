/**
 * A Prometheus histogram whose children are plain arrays: `observe` is a bucket search
 * and three additions, with no label hashing (prom-client's Histogram hashes the label
 * set on every observation). The exposition is produced by prom-client's registry from
 * `get()`, in the same shape as prom-client's own Histogram (`_bucket` with `le` first,
 * `_sum`, `_count`), so scrapes cannot tell the difference.
 */
import type { Metric, Registry } from 'prom-client';

export class HistogramChild {
  readonly labels: Readonly<Record<string, string>>;
  /** Non-cumulative counts per bucket; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  constructor(labels: Record<string, string>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

export class HistogramSeries {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #bounds: readonly number[];
  readonly #children = new Map<string, HistogramChild>();

  constructor(options: {
    name: string;
    help: string;
    buckets: readonly number[];
    registry: Registry;
  }) {
    this.name = options.name;
    this.help = options.help;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    options.registry.registerMetric(this as unknown as Metric);
  }

  /** The child for one label value (created once, then kept). */
  child(labelName: string, labelValue: string): HistogramChild {
    let child = this.#children.get(labelValue);
    if (child === undefined) {
      child = new HistogramChild({ [labelName]: labelValue }, this.#bounds);
      this.#children.set(labelValue, child);
    }
    return child;
  }

  collect(): void {}

  reset(): void {
    this.#children.clear();
  }

  async get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] =
      [];
    for (const child of this.#children.values()) {
      let cumulative = 0;
      for (let i = 0; i < child.counts.length; i++) {
        cumulative += child.counts[i] as number;
        const le = i < this.#bounds.length ? (this.#bounds[i] as number) : '+Inf';
        values.push({
          labels: { le, ...child.labels },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({
        labels: { ...child.labels },
        value: child.sum,
        metricName: `${this.name}_sum`,
      });
      values.push({
        labels: { ...child.labels },
        value: child.count,
        metricName: `${this.name}_count`,
      });
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }
}
