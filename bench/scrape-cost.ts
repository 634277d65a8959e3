// The cost of one /metrics scrape of a `kv-dc-relay serve` relay with many idle sources (one pool, one
// worker per source, publishers that send nothing): the relay's main-thread CPU per scrape (baseline:
// the main thread's CPU over an idle window as long as the scrapes' spacing), and how long the scrape
// holds the relay's event loop at a time: the slowest of back-to-back /healthz requests (served by the
// same loop) while a scrape runs, in scrapes of their own: measured from outside, so the relay's own
// event-loop delay metric is not its only judge (before 2026-12-07 it sampled every 50 ms and missed
// most 20 ms scrape blocks); a /healthz on a new connection waits for a few loop turns, so behind a
// scrape sliced into ~2 ms turns it takes a few of them. Also the relay's own longest loop block
// between two scrapes (its event-loop delay max, measured at every loop iteration since msg-cost-3).
// Each case scrapes as Prometheus does (Accept-Encoding: gzip) and as a client that asks for no
// encoding (curl). SCRAPE_COST_SOURCES=64,512 chooses the cases, SCRAPE_COST_ENCODINGS=gzip,identity
// the encodings.
import * as http from 'http';
import type { BenchResult } from './support/result';
import { publishers, relayConfig } from './support/firehose';
import { scrape, startRelayProcess } from './support/relay-process';
import { median, round } from './support/timing';

const SOURCES = (process.env.SCRAPE_COST_SOURCES ?? '64,512').split(',').map(Number);
const SCRAPES = Number(process.env.SCRAPE_COST_SCRAPES ?? 20);
const ENCODINGS = (process.env.SCRAPE_COST_ENCODINGS ?? 'gzip,identity').split(',');
const SPACING_MS = 300;
const SETTLE_MS = 3_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds of one /healthz request on a connection of its own. */
function healthzMs(metricsAddress: string): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(`http://${metricsAddress}/healthz`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - start));
    });
    req.on('error', reject);
  });
}

/** The slowest /healthz request of those sent one after another while one scrape ran. */
async function longestWaitMs(metricsAddress: string, acceptEncoding: string): Promise<number> {
  let done = false;
  const scraped = scrape(metricsAddress, acceptEncoding).then(() => (done = true));
  let longest = 0;
  while (!done) longest = Math.max(longest, await healthzMs(metricsAddress));
  await scraped;
  return longest;
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const sources of SOURCES) {
    const pubs = await publishers(sources);
    const relay = await startRelayProcess(relayConfig([{ model: 'bench', endpoints: pubs.map((p) => p.lastEndpoint!) }]));
    try {
      await sleep(SETTLE_MS);
      // The main thread's scheduler time (ns, not /proc's 10 ms ticks): support/process.ts.
      const mainMs = (): number => relay.threadCpuMs()!.main;
      const idle: number[] = [];
      for (let i = 0; i < 5; i++) {
        const before = mainMs();
        await sleep(SPACING_MS);
        idle.push(mainMs() - before);
      }
      const idleWaits: number[] = [];
      for (let i = 0; i < SCRAPES; i++) idleWaits.push(await healthzMs(relay.metricsAddress));
      const idleMs = median(idle);
      for (const encoding of ENCODINGS) {
        const cpu: number[] = [];
        // V8's and libuv's helper threads: gzip runs on libuv's pool (GC and the pool's other work too).
        const helpers: number[] = [];
        // The relay's longest loop block between two scrapes (its event-loop delay max, measured at
        // every loop iteration): the window holds the end of one scrape and the start of the next.
        const blocks: number[] = [];
        let first = 0;
        let bytes = 0;
        for (let i = 0; i <= SCRAPES; i++) {
          const before = relay.threadCpuMs()!;
          const text = await scrape(relay.metricsAddress, encoding);
          const after = relay.threadCpuMs()!;
          const used = after.main - before.main;
          bytes = text.length;
          const block = /^kv_dc_relay_event_loop_delay_seconds\{quantile="1"\} (\S+)$/m.exec(text);
          if (i >= 2 && block) blocks.push(Number(block[1]) * 1000);
          if (i === 0) first = used;
          else {
            cpu.push(used);
            helpers.push(after.other - before.other);
          }
          await sleep(SPACING_MS);
        }
        const waits: number[] = [];
        for (let i = 0; i < SCRAPES; i++) {
          waits.push(await longestWaitMs(relay.metricsAddress, encoding));
          await sleep(SPACING_MS);
        }
        results.push({
          name: `main-thread CPU per scrape, ${sources} idle sources, Accept-Encoding ${encoding} (median of ${SCRAPES})`,
          value: round(median(cpu), 2),
          unit: 'ms',
          baseline: { name: `idle ${SPACING_MS} ms`, value: round(idleMs, 2) },
          ratio: idleMs > 0 ? round(median(cpu) / idleMs, 2) : undefined,
          note: `first scrape ${round(first, 1)} ms; helper threads ${round(median(helpers), 2)} ms per scrape; ${bytes} bytes of text`,
        });
        results.push({
          name: `longest event-loop block between scrapes, ${sources} idle sources, Accept-Encoding ${encoding} (median of ${blocks.length})`,
          value: round(median(blocks), 2),
          unit: 'ms',
          note: `max ${round(Math.max(...blocks), 1)} ms (the relay's kv_dc_relay_event_loop_delay_seconds{quantile="1"})`,
        });
        results.push({
          name: `slowest /healthz during a scrape, ${sources} idle sources, Accept-Encoding ${encoding} (median of ${SCRAPES} scrapes)`,
          value: round(median(waits), 2),
          unit: 'ms',
          baseline: { name: '/healthz without a scrape', value: round(median(idleWaits), 2) },
          ratio: round(median(waits) / median(idleWaits), 2),
          note: `max ${round(Math.max(...waits), 1)} ms`,
        });
      }
    } finally {
      await relay.stop();
      for (const p of pubs) p.close();
    }
  }
  return results;
}
