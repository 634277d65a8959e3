// The relay's prom-client registry. A scrape renders each registered metric in registration order as
// prom-client does, except that
// - the providers are sampled once per scrape (samples() below), each at the start of the scrape;
// - the metrics given a text of their own render as it (the per-source families, whose prom-client
//   rendering held the event loop tens of ms at 512 sources: source-series.ts), and may take turns;
// - it yields to the event loop (scrape-turns.ts) between samples, between metrics and inside the
//   per-source texts once a turn took sliceMs (prom-client renders every metric in one turn);
// - scrapes that overlap share one rendering.
import { Registry } from 'prom-client';
import { SCRAPE_SLICE_MS } from '../config/defaults';
import { ScrapeTurns } from './scrape-turns';

export class ScrapeRegistry extends Registry {
  private readonly texts = new Map<string, (turns: ScrapeTurns) => string | Promise<string>>();
  /** Takes each provider's sample of the current scrape (samples()). */
  private readonly providers: (() => unknown)[] = [];
  private scrapes = 0;
  /** The scrape being rendered, by number. */
  private current: number | undefined;
  private rendering: Promise<string> | undefined;

  constructor(private readonly sliceMs = SCRAPE_SLICE_MS) {
    super();
  }

  /**
   * At a scrape, the registered metric `name` renders as `text()` (which must equal prom-client's
   * rendering); it may take several turns of the scrape's (`turns`).
   */
  renderWith(name: string, text: (turns: ScrapeTurns) => string | Promise<string>): void {
    this.texts.set(name, text);
  }

  /**
   * `read` at most once per scrape: a producer sample (pool load, per-source stats, native pool
   * counters) is worth taking once, not once per metric (a scrape held the relay's loop for ~3 ms
   * doing it 27 times), and one sample keeps a scrape's metrics consistent across its turns. A scrape
   * takes every sample first, each in a turn with room for it (the producer's is ~1 ms at 512
   * sources, the diagnostics' up to ~1 ms more). Outside a scrape (prom-client's own rendering,
   * getMetricsAsJSON) a sample is kept for one turn.
   */
  samples<T>(read: () => T): () => T {
    let sample: { value: T; scrape: number | undefined } | undefined;
    const get = (): T => {
      const scrape = this.current;
      if (sample === undefined || sample.scrape !== scrape) {
        const taken = (sample = { value: read(), scrape });
        if (scrape === undefined) setImmediate(() => sample === taken && (sample = undefined));
      }
      return sample.value;
    };
    this.providers.push(get);
    return get;
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
    const turns = new ScrapeTurns(this.sliceMs);
    for (const take of this.providers) {
      await turns.pace();
      take();
    }
    const parts: string[] = [];
    for (const { name } of this.getMetricsAsArray()) {
      await turns.pace();
      const text = this.texts.get(name);
      parts.push(text ? await text(turns) : await this.getSingleMetricAsString(name));
    }
    return `${parts.join('\n\n')}\n`;
  }
}
