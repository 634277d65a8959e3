// The cost of one /metrics scrape of a `kv-dc-relay serve` relay with many idle sources (one pool, one
// worker per source, publishers that send nothing): the relay's main-thread CPU per scrape, and the
// longest event-loop delay the relay's own monitor saw over the scrapes (the scrape is the only work
// of an idle relay beside its once-a-second diagnostics round). Baseline: the main thread's CPU over an
// idle window as long as the scrapes' spacing. SCRAPE_COST_SOURCES=64,512 chooses the cases.
import * as fs from 'fs';
import type { BenchResult } from './support/result';
import { publishers, relayConfig } from './support/firehose';
import { scrape, startRelayProcess } from './support/relay-process';
import { median, round } from './support/timing';

const SOURCES = (process.env.SCRAPE_COST_SOURCES ?? '64,512').split(',').map(Number);
const SCRAPES = Number(process.env.SCRAPE_COST_SCRAPES ?? 20);
const SPACING_MS = 300;
const SETTLE_MS = 3_000;

/** CPU time of a process's main thread in ms, from schedstat (ns: /proc's stat counts 10 ms ticks). */
function mainThreadCpuMs(pid: number): number {
  return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** kv_dc_relay_event_loop_delay_seconds{quantile="1"} of a scrape's text, in ms. */
function maxDelayMs(text: string): number {
  const m = /^kv_dc_relay_event_loop_delay_seconds\{quantile="1"\} (\S+)$/m.exec(text);
  return m ? Number(m[1]) * 1000 : NaN;
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const sources of SOURCES) {
    const pubs = await publishers(sources);
    const relay = await startRelayProcess(relayConfig([{ model: 'bench', endpoints: pubs.map((p) => p.lastEndpoint!) }]));
    try {
      await sleep(SETTLE_MS);
      const mainMs = (): number => mainThreadCpuMs(relay.pid!);
      const idle: number[] = [];
      for (let i = 0; i < 5; i++) {
        const before = mainMs();
        await sleep(SPACING_MS);
        idle.push(mainMs() - before);
      }
      const cpu: number[] = [];
      const delays: number[] = [];
      let first = 0;
      let bytes = 0;
      for (let i = 0; i <= SCRAPES; i++) {
        const before = mainMs();
        const text = await scrape(relay.metricsAddress);
        const used = mainMs() - before;
        bytes = text.length;
        // The window a scrape reports began at the previous scrape: it holds that one's block.
        if (i === 0) first = used;
        else {
          cpu.push(used);
          delays.push(maxDelayMs(text));
        }
        await sleep(SPACING_MS);
      }
      const idleMs = median(idle);
      results.push({
        name: `main-thread CPU per scrape, ${sources} idle sources (median of ${SCRAPES})`,
        value: round(median(cpu), 2),
        unit: 'ms',
        baseline: { name: `idle ${SPACING_MS} ms`, value: round(idleMs, 2) },
        ratio: idleMs > 0 ? round(median(cpu) / idleMs, 2) : undefined,
        note: `first scrape ${round(first, 1)} ms; ${bytes} bytes`,
      });
      results.push({
        name: `longest event-loop delay per scrape window, ${sources} idle sources (median; max)`,
        value: round(median(delays), 2),
        unit: 'ms',
        note: `max ${round(Math.max(...delays), 2)} ms`,
      });
    } finally {
      await relay.stop();
      for (const p of pubs) p.close();
    }
  }
  return results;
}
