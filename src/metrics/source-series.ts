// Families with a series per KV-event source, as Prometheus text made here rather than by prom-client.
// At 512 sources a scrape has ~7,000 such series (14 families): prom-client's collect (a reset, then a
// label-hashed inc per series) and its formatting (label objects, arrays and regex escapes per series)
// held the relay's event loop 25-80 ms per scrape, longer on the first. Here a source's lines are kept
// with the record they were made from and made again only when one of its values changed: the ingest
// StatsBoard hands out the same object for an unchanged record, so an idle source costs a lookup and
// its values' comparison. The families stay registered as prom-client metrics (their definition, and
// what getSingleMetricAsString renders); test/metrics/source-series.test.ts holds the two texts equal.

import type { ScrapeTurns } from './scrape-turns';

/** Records handled between two looks at the clock (a record's comparison costs ~0.1-0.2 µs per family). */
const RECORDS_PER_CHECK = 32;

export interface SourceFamily<R> {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  value(record: R): number;
}

interface Made {
  values: number[];
  lines: string[];
}

/** prom-client's rendering of a sample value (lib/util.js getValueAsString). */
function valueText(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}

/** HELP text escaped as the text format (and prom-client) want: backslash and newline. */
function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export class SourceSeriesText<R extends object> {
  private readonly headers: string[];
  private made = new WeakMap<R, Made>();
  /** The last render's records (as made) in order, and its texts. */
  private order: Made[] = [];
  private texts: string[] | undefined;

  constructor(
    private readonly families: readonly SourceFamily<R>[],
    /**
     * A record's label set as text, e.g. `worker="7",dp_rank="0"`: its values are decimal numbers,
     * which need no escaping.
     */
    private readonly labels: (record: R) => string,
  ) {
    this.headers = families.map((f) => `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}`);
  }

  /**
   * Each family's text (HELP, TYPE, then a line per record in order), in the families' order. With
   * `turns`, it yields to the event loop whenever a turn took its slice: at 512 sources the ingest
   * families' comparison took ~1 ms and the last-event-age family (a new value per source every
   * scrape) ~0.5-1.7 ms, on top of the rest of their turn. One render at a time (a scrape's).
   */
  async render(records: readonly R[], turns?: ScrapeTurns): Promise<string[]> {
    const next = new WeakMap<R, Made>();
    const order: Made[] = [];
    let same = records.length === this.order.length;
    for (const r of records) {
      if (turns && order.length % RECORDS_PER_CHECK === RECORDS_PER_CHECK - 1 && turns.due) await turns.next();
      const made = this.lines(r);
      next.set(r, made);
      same &&= made === this.order[order.length];
      order.push(made);
    }
    // Records no longer handed out are let go with the old map.
    this.made = next;
    this.order = order;
    // Joining ~500 KB of lines was half of an idle scrape's cost: none changed, the texts did not either.
    if (!same || this.texts === undefined) {
      const texts: string[] = [];
      for (const [f, h] of this.headers.entries()) {
        await turns?.pace();
        texts.push([h, ...order.map((m) => m.lines[f])].join('\n'));
      }
      this.texts = texts;
    }
    return this.texts;
  }

  private lines(r: R): Made {
    const values = this.families.map((f) => f.value(r));
    const before = this.made.get(r);
    if (before && values.every((v, f) => Object.is(v, before.values[f]))) return before;
    const labels = `{${this.labels(r)}} `;
    return { values, lines: this.families.map((f, i) => `${f.name}${labels}${valueText(values[i])}`) };
  }
}
