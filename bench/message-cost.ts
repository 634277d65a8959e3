// Relay CPU per engine message at low and mid rates (issue 30 item 2: within 1.5x of a bare zeromq.js
// SUB process receiving the same messages, at 100, 1 000 and 10 000 messages/s over 1, 64 and 512
// sources). Small messages (1 event x 4 blocks: stores of fresh chains and their removals, as
// bench/small-messages), sent at a fixed total rate round robin over the sources by ZMQ publishers in
// this process; a `kv-dc-relay serve` process (one pool, one worker per source, no gRPC subscriber unless asked)
// and, in the same round, a bare SUB process per publisher set take them. Value: relay CPU time (all
// threads, /proc) per message it took; baseline: the bare process's per message received.
// MESSAGE_COST_GRID=rate x sources,... chooses the cases (default: the three diagonal ones).
// MESSAGE_COST_SUBSCRIBERS=N attaches N grpc-js SubscribeKvPool subscribers to the relay's pool before
// the sends start (default 0, the rows recorded so far): in production a pool has subscribers, and
// each delta they take is work (a window timer, a drain, a hand-off, a gRPC write) the relay does.
// The opening /metrics scrape (the counters the window's rate starts from: ~475 KB rendered at 512
// sources) is followed by a settle of SETTLE_MS before the CPU window opens: right before the window,
// the scrape's garbage was collected inside it (a main-thread scavenge charged to the sends).
// MESSAGE_COST_SETTLE_MS=0 measures as before.
import type { BenchResult } from './support/result';
import { bareSubscriberRate, publishers, relayIngestRate } from './support/firehose';
import { PacedSender } from './support/paced';
import { SMALL_BLOCKS_PER_MESSAGE, smallBatches } from './support/small-batches';
import { totalCpuMs, type ThreadCpuMs } from './support/process';
import { median, round } from './support/timing';

const GRID = (process.env.MESSAGE_COST_GRID ?? '100x1,1000x64,10000x512').split(',').map((c) => c.split('x').map(Number) as [number, number]);
// MESSAGE_COST_WARMUP_MS: sending before the measured window (default 2 s, while the relay's isolates
// still compile its code: a longer one shows the steady state).
const WINDOW = { warmupMs: Number(process.env.MESSAGE_COST_WARMUP_MS ?? 2_000), measureMs: Number(process.env.MESSAGE_COST_MS ?? 5_000) };
const ROUNDS = Number(process.env.MESSAGE_COST_ROUNDS ?? 2);
const MESSAGES = 1024;
const SUBSCRIBERS = Number(process.env.MESSAGE_COST_SUBSCRIBERS ?? 0);
const SETTLE_MS = Number(process.env.MESSAGE_COST_SETTLE_MS ?? 2_000);

/** The relay's CPU by thread kind, ms per second (medians over the rounds, each over its CPU window). */
function threadShares(rounds: { cpu: ThreadCpuMs; seconds: number }[]): string {
  const perS = (kind: keyof ThreadCpuMs): number => round(median(rounds.map((t) => t.cpu[kind] / t.seconds)), 0);
  return `main thread ${perS('main')}, ingest threads ${perS('ingest')}, ZMQ I/O ${perS('zmq')}, V8/libuv helpers ${perS('other')}`;
}

/** The relay's wake-ups per message by thread kind (medians over the rounds; each round's wake-ups over its messages). */
function wakeupShares(rounds: { wakes: ThreadCpuMs; messages: number }[]): string {
  const per = (kind: keyof ThreadCpuMs): number => round(median(rounds.map((r) => r.wakes[kind] / r.messages)), 2);
  const total = round(median(rounds.map((r) => (r.wakes.main + r.wakes.ingest + r.wakes.zmq + r.wakes.other) / r.messages)), 2);
  return `${total} (main ${per('main')}, ingest ${per('ingest')}, ZMQ I/O ${per('zmq')}, helpers ${per('other')})`;
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const [rate, sources] of GRID) {
    const payloads = Array.from({ length: sources }, (_, s) => smallBatches(s, MESSAGES));
    const pubs = await publishers(sources);
    try {
      const relayUs: number[] = [];
      const bareUs: number[] = [];
      const relayMsPerS: number[] = [];
      const byThread: { cpu: ThreadCpuMs; seconds: number }[] = [];
      const wakes: { wakes: ThreadCpuMs; messages: number }[] = [];
      const bareWakes: number[] = [];
      const deltasPerMessage: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const bare = await bareSubscriberRate(pubs, payloads, WINDOW, new PacedSender(pubs, payloads, rate));
        if (bare.cpuUsPerMessage !== undefined) bareUs.push(bare.cpuUsPerMessage);
        if (bare.wakeupsPerMessage !== undefined) bareWakes.push(bare.wakeupsPerMessage);
        const relay = await relayIngestRate(pubs, payloads, WINDOW, {
          blocksPerEvent: SMALL_BLOCKS_PER_MESSAGE,
          sender: new PacedSender(pubs, payloads, rate),
          subscribers: SUBSCRIBERS,
          settleMs: SETTLE_MS,
        });
        if (relay.threadCpuMs !== undefined && relay.eventsPerSecond > 0) {
          // The threads' scheduler times (ns), as the bare SUB's: /proc's 10 ms ticks are too coarse here.
          const cpuMs = totalCpuMs(relay.threadCpuMs);
          const messages = relay.eventsPerSecond * relay.cpuSeconds;
          relayUs.push((cpuMs * 1000) / messages);
          relayMsPerS.push(cpuMs / relay.cpuSeconds);
          byThread.push({ cpu: relay.threadCpuMs, seconds: relay.cpuSeconds });
          if (relay.threadWakeups) wakes.push({ wakes: relay.threadWakeups, messages });
          if (SUBSCRIBERS > 0) deltasPerMessage.push(relay.subscriberDeltas / SUBSCRIBERS / messages);
        }
      }
      const value = median(relayUs);
      const baseline = median(bareUs);
      results.push({
        name:
          `relay CPU per message, ${rate} messages/s over ${sources} source(s), 1 event x ${SMALL_BLOCKS_PER_MESSAGE} blocks` +
          (SUBSCRIBERS > 0 ? `, ${SUBSCRIBERS} gRPC subscriber(s)` : ''),
        value: round(value, 0),
        unit: 'µs/message',
        baseline: { name: 'bare zeromq.js SUB process, same messages', value: round(baseline, 0) },
        ratio: round(value / baseline, 2),
        note:
          `goal <= 1.5; relay ${round(median(relayMsPerS), 0)} ms of CPU per second (${threadShares(byThread)}); ` +
          `wake-ups per message: relay ${wakes.length > 0 ? wakeupShares(wakes) : 'n/a'}, bare SUB ${bareWakes.length > 0 ? round(median(bareWakes), 2) : 'n/a'}; ` +
          (SUBSCRIBERS > 0 ? `deltas per message per subscriber ${round(median(deltasPerMessage), 2)}; ` : '') +
          `medians of ${ROUNDS} rounds, ${WINDOW.warmupMs / 1000} s warm-up, ${SETTLE_MS / 1000} s settle after the opening scrape`,
      });
    } finally {
      for (const p of pubs) p.close();
    }
  }
  return results;
}
