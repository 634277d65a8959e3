// Event-loop stalls from the largest engine messages (issue 26 item 4: a single valid 4 MiB message
// held the loop 100-230 ms; goal: none within the limits above 5 ms). A `kv-dc-relay serve`
// process dials one ZMQ publisher that sends, one every PACE_MS, the largest messages the decoder
// takes (events of INGEST_MAX_BLOCKS_PER_EVENT blocks up to INGEST_MAX_MESSAGE_WORDS: removals of
// one-byte ids, and stores of fresh chains with their tokens), then the outsized ones it refuses
// (4 MiB of one-byte ids in one event). The value is the relay's own loop-delay max over that window
// (kv_dc_relay_event_loop_delay_seconds quantile 1, the max since the previous scrape, over every scrape of the window); the baseline the same relay
// over a window of small messages (1 event x 4 blocks) at the same pace. Relay CPU per large message
// from /proc.
import { setTimeout as sleep } from 'timers/promises';
import { Packr } from 'msgpackr';
import { INGEST_MAX_BLOCKS_PER_EVENT, INGEST_MAX_MESSAGE_BYTES, INGEST_MAX_MESSAGE_WORDS } from '../src/config/defaults';
import { encodeSequence } from '../src/ingest/frames';
import type { BenchResult } from './support/result';
import { publishers, relayConfig, TOPIC } from './support/firehose';
import { metricSum, scrape, startRelayProcess } from './support/relay-process';
import { round } from './support/timing';
import { BLOCK_SIZE } from './support/vllm-batches';

const PACE_MS = Number(process.env.INGEST_STALL_PACE_MS ?? 100);
const ROUNDS = Number(process.env.INGEST_STALL_ROUNDS ?? 3);
/** Large messages per round (a third each of removals, stores and outsized events). */
const PER_KIND = 8;
const SETTLE_MS = 60_000;

const packr = new Packr({ useRecords: false });
const batch = (events: unknown[]): Buffer => packr.pack([Date.now() / 1000, events, 0]);
const oneByteIds = (n: number): number[] => Array.from({ length: n }, (_, i) => 1 + (i % 127));

/** Events of INGEST_MAX_BLOCKS_PER_EVENT blocks that fit one message's words (header words included). */
const removalsPerMessage = Math.floor(INGEST_MAX_MESSAGE_WORDS / (INGEST_MAX_BLOCKS_PER_EVENT + 2));
/** Two stores a message, of as many blocks as fit (a store takes two words per block and three more). */
const storeBlocks = Math.min(INGEST_MAX_BLOCKS_PER_EVENT, Math.floor((INGEST_MAX_MESSAGE_WORDS / 2 - 3) / 2));

let nextId = 1_000_000;
/** Two stores of a fresh chain (the second the first's child), with their tokens. */
function largestStore(): Buffer {
  const tokens = Array.from({ length: storeBlocks * BLOCK_SIZE }, (_, i) => i & 0x7f);
  const events = [0, 1].map((k) => {
    const ids = Array.from({ length: storeBlocks }, () => nextId++);
    return ['BlockStored', ids, k === 0 ? null : ids[0] - 1, tokens, BLOCK_SIZE, null, 'GPU'];
  });
  return batch(events);
}

export async function run(): Promise<BenchResult[]> {
  const [pub] = await publishers(1);
  const relay = await startRelayProcess(relayConfig([{ model: 'stall', endpoints: [pub.lastEndpoint!] }]));
  let seq = 0n;
  const send = (payload: Buffer): Promise<void> => pub.send([TOPIC, encodeSequence(seq++), payload]);
  // The relay reports its loop delay since the previous scrape: every scrape's max counts for the window.
  let windowMaxMs = 0;
  const metric = async (name: string): Promise<number> => {
    const text = await scrape(relay.metricsAddress);
    windowMaxMs = Math.max(windowMaxMs, 1000 * metricSum(text, 'kv_dc_relay_event_loop_delay_seconds', 'quantile="1"'));
    return metricSum(text, name);
  };
  const small = batch([['BlockStored', [1, 2, 3, 4], null, Array.from({ length: 4 * BLOCK_SIZE }, (_, i) => i), BLOCK_SIZE, null, 'GPU']]);
  const removal = batch(Array.from({ length: removalsPerMessage }, () => ['BlockRemoved', oneByteIds(INGEST_MAX_BLOCKS_PER_EVENT), 'GPU']));
  const outsized = batch([['BlockRemoved', oneByteIds(INGEST_MAX_MESSAGE_BYTES - 1024), 'GPU']]);
  try {
    // The subscription joins a moment after the connection: send until the relay takes one.
    const joinedBy = Date.now() + SETTLE_MS;
    while ((await metric('kv_dc_relay_ingest_events_total')) === 0) {
      if (Date.now() > joinedBy) throw new Error(`the relay took no message\n${relay.lastLog()}`);
      await send(small);
      await sleep(50);
    }
    const window = async (payloads: Buffer[]): Promise<{ maxMs: number; cpuMs: number }> => {
      const applied = await metric('kv_dc_relay_pool_events_applied_total');
      const malformed = await metric('kv_dc_relay_ingest_malformed_total');
      const expectApplied = applied + payloads.filter((p) => p !== outsized).reduce((n, p) => n + (p === removal ? removalsPerMessage : p === small ? 1 : 2), 0);
      const expectMalformed = malformed + payloads.filter((p) => p === outsized).length;
      await metric('kv_dc_relay_ingest_events_total'); // the loop-delay window starts here
      windowMaxMs = 0;
      const cpu0 = relay.cpuMs() ?? NaN;
      for (const p of payloads) {
        await send(p);
        await sleep(PACE_MS);
      }
      const by = Date.now() + SETTLE_MS;
      while ((await metric('kv_dc_relay_pool_events_applied_total')) < expectApplied || (await metric('kv_dc_relay_ingest_malformed_total')) < expectMalformed) {
        if (Date.now() > by) throw new Error(`the relay did not apply the window\n${relay.lastLog()}`);
        await sleep(50);
      }
      const cpuMs = (relay.cpuMs() ?? NaN) - cpu0;
      await metric('kv_dc_relay_ingest_events_total');
      return { maxMs: windowMaxMs, cpuMs };
    };
    const large: { maxMs: number; cpuMs: number }[] = [];
    const control: { maxMs: number; cpuMs: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      control.push(await window(Array.from({ length: 3 * PER_KIND }, () => small)));
      const payloads: Buffer[] = [];
      for (let i = 0; i < PER_KIND; i++) payloads.push(removal, largestStore(), outsized);
      large.push(await window(payloads));
    }
    const worst = Math.max(...large.map((w) => w.maxMs));
    const controlWorst = Math.max(...control.map((w) => w.maxMs));
    const cpuPerLarge = large.reduce((a, w) => a + w.cpuMs, 0) / (ROUNDS * 3 * PER_KIND);
    return [
      {
        name: `relay event-loop delay, max over ${ROUNDS} windows of ${3 * PER_KIND} largest engine messages (${removalsPerMessage} x ${INGEST_MAX_BLOCKS_PER_EVENT}-id removals, 2 x ${storeBlocks}-block stores, 4 MiB outsized), one per ${PACE_MS} ms`,
        value: round(worst, 2),
        unit: 'ms',
        baseline: { name: 'the same relay, windows of small messages (1 event x 4 blocks) at the same pace', value: round(controlWorst, 2) },
        ratio: round(worst / controlWorst, 2),
        note: `goal <= 5 ms; per window ${large.map((w) => round(w.maxMs, 1)).join(' / ')} ms (control ${control.map((w) => round(w.maxMs, 1)).join(' / ')}); relay CPU ${round(cpuPerLarge, 1)} ms per large message`,
      },
    ];
  } finally {
    await relay.stop();
    pub.close();
  }
}
