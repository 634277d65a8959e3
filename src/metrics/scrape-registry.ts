// The relay's prom-client registry. A scrape renders each registered metric in registration order as
// prom-client does, except that
// - the metrics given a text of their own render as it (the per-source families, whose prom-client
//   rendering held the event loop tens of ms at 512 sources: source-series.ts);
// - it yields to the event loop between metrics once a turn took sliceMs (prom-client renders every
//   metric in one turn), so gRPC streams, heartbeats and ingest hand-offs wait a slice, not a scrape;
// - the providers are sampled once per scrape (samples() below), however many turns it takes;
// - scrapes that overlap share one rendering.
import { Registry } from 'prom-client';
import { SCRAPE_SLICE_MS } from '../config/defaults';

export class ScrapeRegistry extends Registry {
  private readonly texts = new Map<string, () => string>();
  private scrapes = 0;
  /** The scrape being rendered, by number. */
  private current: number | undefined;
  private rendering: Promise<string> | undefined;

  constructor(private readonly sliceMs = SCRAPE_SLICE_MS) {
    super();
  }

  /** At a scrape, the registered metric `name` renders as `text()` (which must equal prom-client's rendering). */
  renderWith(name: string, text: () => string): void {
    this.texts.set(name, text);
  }

  /**
   * `read` at most once per scrape: a producer sample (pool load, per-source stats, native pool
   * counters) is worth taking once, not once per metric (a scrape held the relay's loop for ~3 ms
   * doing it 27 times), and one sample keeps a scrape's metrics consistent across its turns. Outside
   * a scrape (prom-client's own rendering, getMetricsAsJSON) a sample is kept for one turn.
   */
  samples<T>(read: () => T): () => T {
    let sample: { value: T; scrape: number | undefined } | undefined;
    return () => {
      const scrape = this.current;
      if (sample === undefined || sample.scrape !== scrape) {
        const taken = (sample = { value: read(), scrape });
        if (scrape === undefined) setImmediate(() => sample === taken && (sample = undefined));
      }
      return sample.value;
    };
  }

  /** The Prometheus text format (this registry's content type), joined as prom-client's Registry.metrics() joins it. */
  override metrics(): Promise<string> {
    if (!this.rendering) {
      this.current = ++this.scrapes;
      this.rendering = this.render().finally(() => {
        this.current = undefined;
        this.rendering = undefined;
      });
    }
    return this.rendering;
  }

  private async render(): Promise<string> {
    const parts: string[] = [];
    let turn = performance.now();
    for (const { name } of this.getMetricsAsArray()) {
      if (performance.now() - turn >= this.sliceMs) {
        await new Promise((resolve) => setImmediate(resolve));
        turn = performance.now();
      }
      const text = this.texts.get(name);
      parts.push(text ? text() : await this.getSingleMetricAsString(name));
    }
    return `${parts.join('\n\n')}\n`;
  }
}
