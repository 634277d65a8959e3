// JS heap bytes the relay allocates per engine message at low rates (issue 30 item 2's setup:
// bench/message-cost's small messages, paced round robin over the sources, one pool, no gRPC
// subscriber), by isolate: the ingest threads (the pool is hosted on one) and the main thread.
// Garbage is work the relay pays for in scavenges, on its own thread and V8's helpers, and unlike
// CPU time it is counted without the host's noise (alloc-probe.ts: V8's sampling heap profiler,
// collected objects included). Baseline: a bare zeromq.js SUB process taking the same messages in
// the same round, counted the same way. Each relay's idle allocation (its timers and once-a-second
// rounds, no sends) is counted first, IDLE_SETTLE_MS after its start, over IDLE_MS, and reported per
// second beside it: at 100 messages/s that is most of the main thread's share.
// MESSAGE_ALLOC_GRID=rate x sources,... chooses the cases (default 100x1,100x512);
// MESSAGE_ALLOC_SUBSCRIBERS=N attaches N SubscribeKvPool subscribers (default 0): each delta is then
// work on the main thread (the hub, the gRPC write), counted with the rest.
import type { BenchResult } from './support/result';
import { AllocWindows } from './support/alloc-window';
import type { IsolateAllocation } from './support/alloc-probe';
import { bareSubscriberRate, publishers, relayIngestRate, type WindowHooks } from './support/firehose';
import { PacedSender } from './support/paced';
import { SMALL_BLOCKS_PER_MESSAGE, smallBatches } from './support/small-batches';
import { median, round } from './support/timing';

const GRID = (process.env.MESSAGE_ALLOC_GRID ?? '100x1,100x512').split(',').map((c) => c.split('x').map(Number) as [number, number]);
// The warm-up lets V8 optimize the per-message path (~4 000 messages: at 100 messages/s the ingest
// thread's functions run interpreted or baseline-compiled for the first ~30 s, and allocate 2-3
// times what the optimized code does, which keeps numbers in registers and inlines the calls).
const WINDOW = { warmupMs: Number(process.env.MESSAGE_ALLOC_WARMUP_MS ?? 40_000), measureMs: Number(process.env.MESSAGE_ALLOC_MS ?? 15_000) };
const IDLE_SETTLE_MS = 10_000;
const IDLE_MS = Number(process.env.MESSAGE_ALLOC_IDLE_MS ?? 5_000);
// The counts move little between rounds (the same code and messages allocate the same).
const ROUNDS = Number(process.env.MESSAGE_ALLOC_ROUNDS ?? 1);
const SETTLE_MS = 2_000;
const SUBSCRIBERS = Number(process.env.MESSAGE_ALLOC_SUBSCRIBERS ?? 0);
const MESSAGES = 1024;
/** Allocation sites named per isolate kind in the note. */
const SITES = Number(process.env.MESSAGE_ALLOC_SITES ?? 4);

type Kind = 'main' | 'worker';

/** Bytes of the isolates of `kind`, and the window's length (the main isolate's). */
function bytesOf(isolates: IsolateAllocation[], kind: Kind): number {
  return isolates.filter((i) => i.thread === kind).reduce((sum, i) => sum + i.bytes, 0);
}

function windowMs(isolates: IsolateAllocation[]): number {
  return isolates.find((i) => i.thread === 'main')!.ms;
}

/** A window of a process started with `windows.launch`: opened and closed by the hooks, its isolates kept in `into`. */
function counted(windows: AllocWindows, into: IsolateAllocation[][], idle?: IsolateAllocation[][]): WindowHooks {
  return {
    beforeSends: idle
      ? async (pid) => {
          await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
          await windows.open(pid);
          await new Promise((r) => setTimeout(r, IDLE_MS));
          idle.push(await windows.close(pid));
        }
      : undefined,
    opened: (pid) => windows.open(pid),
    closing: async (pid) => void into.push(await windows.close(pid)),
  };
}

/** The heaviest sites of the isolates of `kind`, in bytes per message. */
function sites(isolates: IsolateAllocation[], kind: Kind, messages: number): string {
  const worker = isolates.filter((i) => i.thread === kind).sort((a, b) => b.bytes - a.bytes)[0];
  return (worker?.sites ?? [])
    .slice(0, SITES)
    .map((s) => {
      const [bytes, ...site] = s.split(' ');
      return `${round(Number(bytes) / messages, 0)} ${site.join(' ')}`;
    })
    .join('; ');
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const [rate, sources] of GRID) {
    const payloads = Array.from({ length: sources }, (_, s) => smallBatches(s, MESSAGES));
    const pubs = await publishers(sources);
    const windows = new AllocWindows();
    try {
      const relayPerMessage: number[] = [];
      const mainPerMessage: number[] = [];
      const ingestPerMessage: number[] = [];
      const barePerMessage: number[] = [];
      const idleMain: number[] = [];
      const idleIngest: number[] = [];
      let lastSites = '';
      for (let r = 0; r < ROUNDS; r++) {
        const bareWindows: IsolateAllocation[][] = [];
        const bare = await bareSubscriberRate(pubs, payloads, WINDOW, new PacedSender(pubs, payloads, rate), {
          launch: windows.launch,
          window: counted(windows, bareWindows),
        });
        const bareIsolates = bareWindows[0];
        barePerMessage.push((bytesOf(bareIsolates, 'main') + bytesOf(bareIsolates, 'worker')) / ((bare.messagesPerSecond * windowMs(bareIsolates)) / 1000));
        const relayWindows: IsolateAllocation[][] = [];
        const idle: IsolateAllocation[][] = [];
        const relay = await relayIngestRate(pubs, payloads, WINDOW, {
          blocksPerEvent: SMALL_BLOCKS_PER_MESSAGE,
          sender: new PacedSender(pubs, payloads, rate),
          settleMs: SETTLE_MS,
          subscribers: SUBSCRIBERS,
          launch: windows.launch,
          window: counted(windows, relayWindows, idle),
        });
        const isolates = relayWindows[0];
        // One event per message: the events the relay took are its messages.
        const messages = (relay.eventsPerSecond * windowMs(isolates)) / 1000;
        const main = bytesOf(isolates, 'main');
        const ingest = bytesOf(isolates, 'worker');
        relayPerMessage.push((main + ingest) / messages);
        mainPerMessage.push(main / messages);
        ingestPerMessage.push(ingest / messages);
        idleMain.push(bytesOf(idle[0], 'main') / (windowMs(idle[0]) / 1000));
        idleIngest.push(bytesOf(idle[0], 'worker') / (windowMs(idle[0]) / 1000));
        lastSites = `ingest thread: ${sites(isolates, 'worker', messages)} | main thread: ${sites(isolates, 'main', messages)}`;
      }
      const value = median(relayPerMessage);
      const baseline = median(barePerMessage);
      const m = (values: number[]): number => round(median(values), 0);
      results.push({
        name:
          `relay JS heap allocated per message, ${rate} messages/s over ${sources} source(s), 1 event x ${SMALL_BLOCKS_PER_MESSAGE} blocks` +
          (SUBSCRIBERS > 0 ? `, ${SUBSCRIBERS} gRPC subscriber(s)` : ''),
        value: round(value, 0),
        unit: 'B/message',
        baseline: { name: 'bare zeromq.js SUB process, same messages', value: round(baseline, 0) },
        ratio: round(value / baseline, 2),
        note:
          `main thread ${m(mainPerMessage)} B/message (idle ${m(idleMain.map((b) => b / 1024))} KiB/s), ` +
          `ingest threads ${m(ingestPerMessage)} B/message (idle ${m(idleIngest.map((b) => b / 1024))} KiB/s); ` +
          `per round relay ${relayPerMessage.map((v) => round(v, 0)).join(', ')}, bare ${barePerMessage.map((v) => round(v, 0)).join(', ')}; ` +
          `top sites, B/message (last round): ${lastSites}; ` +
          `medians of ${ROUNDS} rounds, ${WINDOW.warmupMs / 1000} s warm-up, ${WINDOW.measureMs / 1000} s window`,
      });
    } finally {
      windows.dispose();
      for (const p of pubs) p.close();
    }
  }
  return results;
}
