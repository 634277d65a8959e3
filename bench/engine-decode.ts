// Engine payload -> packed apply batch: the native decoder (the production decoder since #8 item 1
// replaced the JS path) against msgpackr's decode alone and against raw XXH3 over the same token
// windows, on the same payloads in the same run. CPU time per pass (process.cpuUsage), median of
// several slices: steadier than wall clock on a shared machine.
import { Unpackr } from 'msgpackr';
import { EngineBatchDecoder, needsRoom, packPrompts } from '../src/native';
import { xxh3BlocksBaseline } from '../test/support/native-testing';
import { encodeBatch, type EventEncoding, type SimEvent } from '../src/sim';
import { Rng } from '../src/sim/rng';
import type { BenchResult } from './support/result';
import { median } from './support/timing';

const BLOCK_SIZE = 16;
const VOCABULARY = 152_064;
const SLICE_SECONDS = 0.15;
const SLICES = 7;
const WORKER = 7n;

interface Workload {
  name: string;
  payloads: Buffer[];
  blocks: number;
  /** Every stored event's tokens, for the raw XXH3 baseline. */
  storedTokens: Uint32Array[];
}

/** `messages` batches of `events` events of `blocks` blocks each, 20 % of them removals. */
function workload(name: string, messages: number, events: number, blocks: number, encoding: EventEncoding): Workload {
  const rng = new Rng(0x9e3779b9);
  const next = () => rng.int(2 ** 32);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  const out: Workload = { name, payloads: [], blocks: 0, storedTokens: [] };
  for (let m = 0; m < messages; m++) {
    const batch: SimEvent[] = [];
    for (let e = 0; e < events; e++) {
      const blockHashes = Array.from({ length: blocks }, hash);
      out.blocks += blocks;
      if (next() % 5 === 0) {
        batch.push({ type: 'BlockRemoved', blockHashes });
        continue;
      }
      const tokenIds = Uint32Array.from({ length: blocks * BLOCK_SIZE }, () => next() % VOCABULARY);
      out.storedTokens.push(tokenIds);
      batch.push({ type: 'BlockStored', blockHashes, parentBlockHash: hash(), tokenIds, blockSize: BLOCK_SIZE });
    }
    out.payloads.push(encodeBatch(1_700_000_000.5 + m, batch, 0, { events: encoding }));
  }
  return out;
}

/** Median CPU seconds (user + system) of one call of `pass`. */
function cpuSecondsPerPass(pass: () => void): number {
  pass();
  const perPass: number[] = [];
  for (let s = 0; s < SLICES; s++) {
    let passes = 0;
    const start = process.cpuUsage();
    let used = 0;
    do {
      pass();
      passes += 1;
      const d = process.cpuUsage(start);
      used = (d.user + d.system) / 1e6;
    } while (used < SLICE_SECONDS);
    perPass.push(used / passes);
  }
  return median(perPass);
}

function nativePass(w: Workload): () => void {
  const decoder = new EngineBatchDecoder({ workerId: WORKER, kvBlockSize: BLOCK_SIZE, eagle: false, dpStartRank: 0, dpSize: 1 });
  let meta = new Uint32Array(1024);
  let words = new BigUint64Array(1024);
  // The whole workload accumulates into one buffer, as a burst would.
  return () => {
    let m = 0;
    let wd = 0;
    for (const payload of w.payloads) {
      const r = decoder.decodeInto(payload, 0, meta, m, words, wd);
      if (needsRoom(r)) {
        meta = new Uint32Array(r.needMeta * 2);
        words = new BigUint64Array(r.needWords * 2);
        m = 0;
        wd = 0;
        continue;
      }
      m = r.metaEnd;
      wd = r.wordsEnd;
    }
  };
}

function msgpackrPass(w: Workload): () => void {
  const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });
  return () => {
    for (const payload of w.payloads) unpackr.unpack(payload);
  };
}

function xxh3Pass(w: Workload): () => void {
  const batch = packPrompts(w.storedTokens);
  return () => {
    xxh3BlocksBaseline(batch, { kvBlockSize: BLOCK_SIZE });
  };
}

export async function run(): Promise<BenchResult[]> {
  const workloads = [
    workload('16 events × 32 blocks, map events', 64, 16, 32, 'map'),
    workload('16 events × 32 blocks, array events', 64, 16, 32, 'array'),
    workload('1 event × 4 blocks, map events', 2048, 1, 4, 'map'),
  ];
  const results: BenchResult[] = [];
  for (const w of workloads) {
    const rate = (seconds: number) => w.blocks / seconds;
    const native = cpuSecondsPerPass(nativePass(w));
    const msgpackr = cpuSecondsPerPass(msgpackrPass(w));
    const xxh3 = cpuSecondsPerPass(xxh3Pass(w));
    const bytes = w.payloads.reduce((n, p) => n + p.length, 0);
    const perMessageUs = (native / w.payloads.length) * 1e6;
    const note = `bs ${BLOCK_SIZE}, 20 % removals, ${(bytes / w.payloads.length / 1024).toFixed(1)} KiB/message; native ${perMessageUs.toFixed(2)} µs CPU/message`;
    const row = (name: string, baselineName: string, baselineSeconds: number): BenchResult => ({
      name: `${name}, ${w.name}`,
      value: rate(native),
      unit: 'blocks/s',
      baseline: { name: baselineName, value: rate(baselineSeconds) },
      ratio: baselineSeconds / native,
      note,
    });
    results.push(
      row('native decodeInto vs msgpackr alone', 'msgpackr unpack only (no hashing, no packing)', msgpackr),
      row('native decodeInto vs raw XXH3', 'raw XXH3 over the same stored token windows (native loop)', xxh3),
    );
  }
  return results;
}
