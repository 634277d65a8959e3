// Soak: a relay process (bench/soak/relay-host) under a steady load for N minutes: simulated
// engines publishing, a few RelayClient consumers that stay, and one that connects, installs and
// leaves every few seconds. The relay's RSS, heap and event-loop delay are sampled every second and
// written to soak.csv and soak.svg; the run fails (exit 1) when RSS or heap grew over the last half
// of the run faster than the allowed slope (MiB per minute).
//   npm run soak -- --minutes N [--out DIR] [--max-rss-slope MIB_PER_MIN] [--max-heap-slope MIB_PER_MIN]
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';
import { RelayClient } from '../../src/client';
import { SimulatedEngine } from '../../src/sim';
import { memoryGrowth } from './growth';
import { plotSvg } from './plot';
import type { SoakSample } from './relay-host';

const MIB = 2 ** 20;
const BLOCK_SIZE = 16;
const ENGINES = 2;
const STAYING_CONSUMERS = 4;
const CHURN_EVERY_MS = 3_000;
const WORKLOAD_TICK_MS = 5;

interface Options {
  minutes: number;
  out: string;
  maxRssSlope: number;
  maxHeapSlope: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { minutes: 1, out: 'soak-out', maxRssSlope: 10, maxHeapSlope: 5 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const number = Number(value);
    if (flag === '--out' && value) o.out = value;
    else if (flag === '--minutes' && number > 0) o.minutes = number;
    else if (flag === '--max-rss-slope' && number > 0) o.maxRssSlope = number;
    else if (flag === '--max-heap-slope' && number > 0) o.maxHeapSlope = number;
    else throw new Error(`usage: soak --minutes N [--out DIR] [--max-rss-slope MIB_PER_MIN] [--max-heap-slope MIB_PER_MIN] (bad: ${flag} ${value ?? ''})`);
  }
  return o;
}

function relayConfig(engines: SimulatedEngine[]): Record<string, unknown> {
  return {
    dcId: 'dc-soak',
    bind: '127.0.0.1:0',
    expectedUniqueBlocks: 65_536,
    endpoints: [{
      namespace: 'prod', component: 'backend', endpoint: 'generate',
      model: { name: 'llama', kvBlockSize: BLOCK_SIZE },
      workerType: 'aggregated',
      workers: engines.map((e, i) => ({
        id: i + 1, dpSize: e.dpSize, dpStartRank: e.dpStartRank, totalKvBlocks: 1024, live: true,
        kvEvents: { endpoint: e.pubEndpoint, replayEndpoint: e.replayEndpoint },
      })),
    }],
  };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-soak-'));
  const engines = await Promise.all(Array.from({ length: ENGINES }, (_, i) =>
    new SimulatedEngine({ modelName: 'llama', bufferSteps: 1_000, workload: { blockSize: BLOCK_SIZE, seed: i + 1, capacityBlocks: 512 } }).start()));
  const file = path.join(dir, 'relay.json');
  fs.writeFileSync(file, JSON.stringify(relayConfig(engines)));
  const host = spawn(process.execPath, [path.join(__dirname, 'relay-host.js'), file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const samples: SoakSample[] = [];
  const address = await new Promise<string>((resolve, reject) => {
    host.once('exit', (code) => reject(new Error(`relay host exited ${code}`)));
    readline.createInterface({ input: host.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as { address?: string } & SoakSample;
      if (msg.address) resolve(msg.address);
      else samples.push(msg);
    });
  });
  const clients = Array.from({ length: STAYING_CONSUMERS }, (_, i) => new RelayClient(address, { subscriberId: `soak-${i}` }));
  clients.forEach((c) => c.start());
  engines.forEach((e) => e.startWorkload(WORKLOAD_TICK_MS));
  let churned = 0;
  const churn = setInterval(() => {
    const c = new RelayClient(address, { subscriberId: `soak-churn-${churned++}` });
    c.on('replicaInstalled', () => c.close());
    c.start();
    setTimeout(() => c.close(), CHURN_EVERY_MS - 100).unref();
  }, CHURN_EVERY_MS);
  console.log(`soak: ${o.minutes} min against ${address}; writing ${o.out}/soak.csv and soak.svg`);
  await new Promise((resolve) => setTimeout(resolve, o.minutes * 60_000));

  clearInterval(churn);
  engines.forEach((e) => e.stopWorkload());
  clients.forEach((c) => c.close());
  const exited = new Promise((resolve) => host.once('exit', resolve));
  host.kill('SIGTERM');
  await exited;
  await Promise.all(engines.map((e) => e.stop()));
  fs.rmSync(dir, { recursive: true, force: true });

  fs.mkdirSync(o.out, { recursive: true });
  const header = 't_s,rss_mib,heap_used_mib,array_buffers_mib,external_mib,loop_delay_p99_ms,loop_delay_max_ms';
  const rows = samples.map((s) => [s.tMs / 1000, s.rssBytes / MIB, s.heapUsedBytes / MIB, s.arrayBuffersBytes / MIB, s.externalBytes / MIB, s.loopDelayP99Ms, s.loopDelayMaxMs].map((v) => v.toFixed(3)).join(','));
  fs.writeFileSync(path.join(o.out, 'soak.csv'), `${[header, ...rows].join('\n')}\n`);
  const times = samples.map((s) => s.tMs / 1000);
  fs.writeFileSync(path.join(o.out, 'soak.svg'), plotSvg(times, [
    { label: 'relay RSS', unit: 'MiB', values: samples.map((s) => s.rssBytes / MIB) },
    { label: 'relay heap used', unit: 'MiB', values: samples.map((s) => s.heapUsedBytes / MIB) },
    { label: 'event-loop delay p99 per second', unit: 'ms', values: samples.map((s) => s.loopDelayP99Ms) },
  ]));

  if (samples.length < 10) throw new Error('too few samples');
  const { rssSlope, heapSlope, rssGrew, heapGrew } = memoryGrowth(samples, o);
  const p99s = samples.map((s) => s.loopDelayP99Ms).sort((a, b) => a - b);
  const last = samples[samples.length - 1];
  console.log(`soak: ${samples.length} samples, ${churned} churned consumers; RSS ${(last.rssBytes / MIB).toFixed(1)} MiB ` +
    `(last-half slope ${rssSlope.toFixed(2)} MiB/min, limit ${o.maxRssSlope}), heap ${(last.heapUsedBytes / MIB).toFixed(1)} MiB ` +
    `(slope ${heapSlope.toFixed(2)} MiB/min, limit ${o.maxHeapSlope}), loop delay p99 median ${p99s[Math.floor(p99s.length / 2)].toFixed(1)} ms, worst ${p99s[p99s.length - 1].toFixed(1)} ms`);
  if (rssGrew || heapGrew) {
    console.error('soak: FAILED: memory grew over the last half of the run');
    process.exitCode = 1;
  }
}

main().catch((err: Error) => {
  console.error(`soak: ${err.message}`);
  process.exit(1);
});
