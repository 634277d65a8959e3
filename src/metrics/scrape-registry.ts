// The relay's prom-client registry: a scrape renders each registered metric in registration order as
// prom-client does, except the metrics given a text of their own (the per-source families, whose
// prom-client rendering held the event loop tens of ms at 512 sources: source-series.ts).
import { Registry } from 'prom-client';

export class ScrapeRegistry extends Registry {
  private readonly texts = new Map<string, () => string>();

  /** At a scrape, the registered metric `name` renders as `text()` (which must equal prom-client's rendering). */
  renderWith(name: string, text: () => string): void {
    this.texts.set(name, text);
  }

  /** The Prometheus text format (this registry's content type), as prom-client's Registry.metrics() joins it. */
  override async metrics(): Promise<string> {
    const parts: string[] = [];
    for (const { name } of this.getMetricsAsArray()) {
      const text = this.texts.get(name);
      parts.push(text ? text() : await this.getSingleMetricAsString(name));
    }
    return `${parts.join('\n\n')}\n`;
  }
}
