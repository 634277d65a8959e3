// Small messages at capacity (#8: 1 event × 4 blocks per message, ≥ 0.8 of bare zeromq.js PUB→SUB
// messages/s on the same frames). A `kv-dc-relay serve` process dials 1 and 8 ZMQ publishers that
// send small messages (bench/support/small-batches.ts: stores of fresh 4-block chains and their
// removals) as fast as the sockets take them; the value is the messages/s the relay took over the
// window (its own kv_dc_relay_ingest_events_total: one event per message), against a bare zeromq.js
// SUB process reading the same publishers in the same run. Relay CPU per message from /proc.
//
// This is the relay's capacity, what bench/e2e.ts's closed loop does not show: there at most 128
// events are in flight, and each waits for the relay's publication slice (threshold 16 events or
// 1 ms), so events/s there is bounded by latency as much as by work. Relay and bare runs alternate
// ROUNDS times (the machine is shared): the ratio is the median of each round's relay / bare ratio
// (the two runs of a round are seconds apart; the bare rate moved 2x between rounds on the shared
// VM), value and baseline the medians of the rates.
import type { BenchResult } from './support/result';
import { bareSubscriberRate, publishers, relayIngestRate, type BareRate, type IngestRate } from './support/firehose';
import { SMALL_BLOCK_SIZE, SMALL_BLOCKS_PER_MESSAGE, smallBatches } from './support/small-batches';
import type { ThreadCpuMs } from './support/process';
import { median, round } from './support/timing';

const SOURCES = [1, 8];
const WINDOW = { warmupMs: 1_000, measureMs: Number(process.env.SMALL_MESSAGES_MS ?? 3_000) };
const ROUNDS = Number(process.env.SMALL_MESSAGES_ROUNDS ?? 3);
/** Distinct messages per source, sent round-robin (half stores, half their removals). */
const MESSAGES = 4096;
/** The relay's limits.ingestThreads; unset = the relay's default (one per core). */
const INGEST_THREADS = process.env.SMALL_MESSAGES_THREADS === undefined ? undefined : Number(process.env.SMALL_MESSAGES_THREADS);

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const n of SOURCES) {
    const payloads = Array.from({ length: n }, (_, s) => smallBatches(s, MESSAGES));
    const pubs = await publishers(n);
    try {
      const bareRuns: BareRate[] = [];
      const relay: IngestRate[] = [];
      const extra = INGEST_THREADS === undefined ? {} : { limits: { ingestThreads: INGEST_THREADS } };
      for (let r = 0; r < ROUNDS; r++) {
        bareRuns.push(await bareSubscriberRate(pubs, payloads, WINDOW));
        relay.push(await relayIngestRate(pubs, payloads, WINDOW, { extra, blocksPerEvent: SMALL_BLOCKS_PER_MESSAGE }));
      }
      const bare = bareRuns.map((b) => b.messagesPerSecond);
      const rate = median(relay.map((m) => m.eventsPerSecond));
      const bareRate = median(bare);
      const perMessage = (m: IngestRate, ms: number | undefined): number => (ms === undefined ? NaN : (ms * 1000) / (m.eventsPerSecond * (WINDOW.measureMs / 1000)));
      const cpuUs = median(relay.map((m) => perMessage(m, m.cpuMs)));
      const byThread = (kind: keyof ThreadCpuMs): number => round(median(relay.map((m) => perMessage(m, m.threadCpuMs?.[kind]))), 1);
      const bytes = payloads[0].reduce((a, p) => a + p.length, 0) / payloads[0].length;
      results.push({
        name: `messages/s taken by one relay process at capacity, ${n} source(s), 1 event × ${SMALL_BLOCKS_PER_MESSAGE} blocks per message`,
        value: round(rate, 0),
        unit: 'messages/s',
        baseline: { name: 'bare zeromq.js SUB process, same publishers and frames', value: round(bareRate, 0) },
        ratio: round(median(relay.map((m, i) => m.eventsPerSecond / bare[i]))),
        note:
          `bs ${SMALL_BLOCK_SIZE}, half stores of fresh chains and half their removals, ${Math.round(bytes)} B/message; ` +
          `ingest threads ${INGEST_THREADS ?? 'default (one per core)'}; goal ratio >= 0.8; relay CPU ${round(cpuUs, 1)} µs/message ` +
          `(main thread ${byThread('main')}, ingest threads ${byThread('ingest')}, ZMQ I/O ${byThread('zmq')}, V8/libuv helpers ${byThread('other')}), ` +
          `bare SUB process ${round(median(bareRuns.map((b) => b.cpuUsPerMessage ?? NaN)), 1)} µs/message; ` +
          `pool applied ${round(median(relay.map((m) => m.appliedEventsPerSecond)), 0)} messages/s (${relay.reduce((a, m) => a + m.mailboxOverflows, 0)} batches dropped on a full pool mailbox); ` +
          `${relay.reduce((a, m) => a + m.gaps, 0)} gaps (PUB drops) in the windows; rounds (relay / bare k messages/s) ${relay.map((m, i) => `${round(m.eventsPerSecond / 1000, 1)} / ${round(bare[i] / 1000, 1)}`).join(', ')}; ` +
          `${WINDOW.measureMs / 1000} s windows after ${WINDOW.warmupMs / 1000} s warm-up, median of ${ROUNDS} alternating rounds`,
      });
    } finally {
      for (const p of pubs) p.close();
    }
  }
  return results;
}
