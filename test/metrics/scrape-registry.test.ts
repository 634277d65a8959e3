// A scrape renders in slices that yield to the event loop, with one provider sample per scrape however
// many turns it takes; overlapping scrapes share one rendering. Over the real HTTP /metrics server.
import { Gauge, Registry } from 'prom-client';
import { ScrapeRegistry } from '../../src/metrics/scrape-registry';
import { startMetricsServer, type MetricsServer } from '../../src/metrics/server';

let server: MetricsServer | undefined;
afterEach(async () => server?.close());

const METRICS = 40;

/** A registry of METRICS gauges reading one sampled value, and the count of samples taken. */
function gauges(registry: ScrapeRegistry): { samples(): number } {
  let taken = 0;
  const sample = registry.samples(() => ++taken);
  for (let i = 0; i < METRICS; i++) {
    new Gauge({ name: `g${i}`, help: `gauge ${i}`, registers: [registry], collect() { this.set(sample()); } });
  }
  return { samples: () => taken };
}

/** Counts event-loop turns (check phases) until stopped. */
function turns(): { count(): number; stop(): void } {
  let count = 0;
  let on = true;
  const next = (): void => {
    if (!on) return;
    count += 1;
    setImmediate(next);
  };
  setImmediate(next);
  return { count: () => count, stop: () => (on = false) };
}

test('with a zero slice a scrape yields between every two metrics, and samples its providers once', async () => {
  const registry = new ScrapeRegistry(0);
  const g = gauges(registry);
  server = await startMetricsServer('127.0.0.1:0', registry, () => true);
  const t = turns();
  const text = await (await fetch(`http://${server.address}/metrics`)).text();
  t.stop();
  // Every gauge shows the one sample of this scrape.
  for (let i = 0; i < METRICS; i++) expect(text).toContain(`\ng${i} 1\n`);
  expect(g.samples()).toBe(1);
  // The loop turned at least once between two metrics (the HTTP exchange adds turns of its own).
  expect(t.count()).toBeGreaterThanOrEqual(METRICS - 1);
  // As prom-client renders the same metrics (with a sample of its own).
  await new Promise((resolve) => setImmediate(resolve));
  expect(await Registry.prototype.metrics.call(registry)).toBe(text.replace(/^(g\d+) 1$/gm, '$1 2'));
});

test('overlapping scrapes share one rendering; the next scrape samples again', async () => {
  const registry = new ScrapeRegistry(0);
  const g = gauges(registry);
  server = await startMetricsServer('127.0.0.1:0', registry, () => true);
  const scrape = async (): Promise<string> => (await fetch(`http://${server!.address}/metrics`)).text();
  const [a, b] = await Promise.all([registry.metrics(), registry.metrics()]);
  expect(a).toBe(b);
  expect(g.samples()).toBe(1);
  expect(await scrape()).toContain('\ng0 2\n');
  expect(g.samples()).toBe(2);
});

test('a scrape whose work fits its slice takes one turn', async () => {
  // A slice far above the work (the default 2 ms is not: a loaded CI machine renders 40 cold gauges
  // slower than that, and the scrape then rightly yields).
  const registry = new ScrapeRegistry(1_000);
  gauges(registry);
  const t = turns();
  const text = await registry.metrics();
  t.stop();
  expect(text).toContain('\ng39 1\n');
  expect(t.count()).toBe(0);
});
