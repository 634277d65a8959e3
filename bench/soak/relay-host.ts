// The relay under soak, in its own process: startRelay on the config file given as argv[2], and
// once a second one JSON line on stdout with its RSS, heap and event-loop delay (p99 and max over
// the second, from perf_hooks' histogram). The first line is {"address": ...} once it listens.
import { monitorEventLoopDelay } from 'perf_hooks';
import { silentLogger } from '../../src/log';
import { startRelay } from '../../src/server';

export interface SoakSample {
  tMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** Memory outside the V8 heap: Buffers and ArrayBuffers (the ingest bursts, frames), then all of it. */
  arrayBuffersBytes: number;
  externalBytes: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

const SAMPLE_MS = 1_000;

async function main(): Promise<void> {
  const relay = await startRelay({ configFile: process.argv[2], logger: silentLogger });
  process.stdout.write(`${JSON.stringify({ address: relay.address })}\n`);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const start = Date.now();
  const timer = setInterval(() => {
    const mem = process.memoryUsage();
    const sample: SoakSample = {
      tMs: Date.now() - start,
      rssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      arrayBuffersBytes: mem.arrayBuffers,
      externalBytes: mem.external,
      loopDelayP99Ms: delay.percentile(99) / 1e6,
      loopDelayMaxMs: delay.max / 1e6,
    };
    delay.reset();
    process.stdout.write(`${JSON.stringify(sample)}\n`);
  }, SAMPLE_MS);
  process.once('SIGTERM', () => {
    clearInterval(timer);
    void relay.shutdown().then(() => process.exit(0));
  });
}

void main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
