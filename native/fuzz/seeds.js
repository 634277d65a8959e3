// Writes the seed corpus of each fuzz target (native/fuzz/*_fuzz.cc) from the spec's golden vectors
// (../shared/vectors): CBI1 frames and assembly sequences, pool event batches over the block-hash
// cases, and engine KVEventBatch payloads (msgpackr, both encodings) over the same cases.
// Usage: node native/fuzz/seeds.js <corpus dir> — writes <dir>/<target>/seed-NNN.
'use strict';
const fs = require('fs');
const path = require('path');
const { Packr } = require('msgpackr');

const root = path.join(__dirname, '..', '..');
const vectors = path.join(root, '..', 'shared', 'vectors');
const load = (name) => JSON.parse(fs.readFileSync(path.join(vectors, name), 'utf8'));
const out = process.argv[2];
if (!out) throw new Error('usage: node native/fuzz/seeds.js <corpus dir>');

function writeAll(target, seeds) {
  const dir = path.join(out, target);
  fs.mkdirSync(dir, { recursive: true });
  seeds.forEach((s, i) => fs.writeFileSync(path.join(dir, `seed-${String(i).padStart(3, '0')}`), s));
  return seeds.length;
}

const u8 = (v) => Buffer.from([v & 0xff]);
const u16 = (v) => { const b = Buffer.alloc(2); b.writeUInt16LE(v); return b; };
const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; };
const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v))); return b; };

// --- cbi1: [u8 log2(bucketCount) - 1][u8 options][u64 seed] then [u16 len][frame]... -----------
function cbi1Seed(format, frames, fixChecksum) {
  const log2 = Math.log2(Number(format.bucket_count));
  if (!Number.isInteger(log2) || log2 < 1 || log2 > 20) return null;  // the target's range
  const parts = [u8(log2 - 1), u8(fixChecksum ? 1 : 0), u64(format.seed)];
  for (const hex of frames) {
    const frame = Buffer.from(hex, 'hex');
    if (frame.length > 0xffff) return null;
    parts.push(u16(frame.length), frame);
  }
  return Buffer.concat(parts);
}
const cbi1 = load('cbi1.json');
const cbi1Seeds = [];
for (const f of [...cbi1.frames, ...cbi1.malformed_frames, ...cbi1.decoder_accepts]) {
  if (typeof f.frame_hex !== 'string') continue;
  for (const fix of [false, true]) cbi1Seeds.push(cbi1Seed(f.expected_format, [f.frame_hex], fix));
}
for (const c of cbi1.assembly_cases) {
  const frames = c.steps.map((s) => s.frame_hex).filter((h) => typeof h === 'string');
  cbi1Seeds.push(cbi1Seed(c.expected_format, frames, false));
}

// --- pool batch: [u8 events][events x 5 u32 meta][u64 words] ------------------------------------
const blockCases = load('block_hashes.json').cases.filter((c) => c.expected_block_hashes.length > 0);
function poolSeed(events) {
  const meta = [];
  const words = [];
  for (const e of events) {
    meta.push(u32(e.kind), u32(e.rank ?? 0), u32(e.flags ?? 0), u32(e.start ?? 0), u32(e.ids.length));
    words.push(u64(e.worker));
    if (e.parent !== undefined) words.push(u64(e.parent));
    for (const id of e.ids) words.push(u64(id));
    for (const h of e.hashes ?? []) words.push(u64(h));
  }
  return Buffer.concat([u8(events.length), ...meta, ...words]);
}
const poolSeeds = blockCases.map((c, i) => {
  const hashes = c.expected_block_hashes.map(BigInt);
  const ids = hashes.map((_, j) => BigInt(i * 16 + j));
  const half = Math.max(1, Math.floor(ids.length / 2));
  return poolSeed([
    { kind: 1, worker: 1, ids: ids.slice(0, half), hashes: hashes.slice(0, half) },
    ...(ids.length > half
      ? [{ kind: 1, worker: 1, flags: 3, start: half, parent: ids[half - 1], ids: ids.slice(half), hashes: hashes.slice(half) }]
      : []),
    { kind: 1, worker: 2, ids, hashes },
    { kind: 2, worker: 1, ids: ids.slice().reverse() },
    { kind: 3, worker: 2, ids: [] },
  ]);
});

// --- engine payloads: [u8 options][u8 dpStartRank][u8 dpSize - 1][msgpack KVEventBatch] ----------
const packr = new Packr({ useRecords: false, variableMapSize: true });
const BLOCK_SIZE_OPTION = { 1: 0, 2: 1, 4: 2, 16: 3 };
const engineSeeds = [];
for (const c of blockCases) {
  const bs = Number(c.kv_block_size);
  if (!(bs in BLOCK_SIZE_OPTION)) continue;
  const eagle = c.hash_format === 'eagle';
  const options = BLOCK_SIZE_OPTION[bs] | (eagle ? 4 : 0);
  const ids = c.expected_block_hashes.map((_, j) => BigInt(1000 + j));
  const lora = c.lora_name ?? null;
  const mapStored = { type: 'BlockStored', block_hashes: ids, parent_block_hash: null, token_ids: c.tokens, block_size: bs, lora_name: lora, medium: 'GPU' };
  const arrayStored = ['BlockStored', ids, null, c.tokens, bs, null, 'GPU', lora, null];
  const payloads = [
    [1.5, [mapStored, { type: 'BlockRemoved', block_hashes: ids.slice(0, 1), medium: 'GPU' }], 0],
    [2.5, [arrayStored, ['BlockRemoved', ids.slice(0, 1), 'GPU'], ['AllBlocksCleared']], 0],
    { ts: 3.5, events: [mapStored, { type: 'AllBlocksCleared' }], data_parallel_rank: 1 },
  ];
  for (const p of payloads) engineSeeds.push(Buffer.concat([u8(options), u8(0), u8(1), packr.pack(p)]));
}

// bucket_map: a fill over the indexed key space (drains start from a few dozen keys), then erasures
// of half of it, raw 8-byte keys, a fill with reservations past a drain's room, and crowds of crafted
// keys in a fresh map and mid-drain.
const bucketSeeds = [];
{
  const fill = [];
  for (let i = 0; i < 256; i++) fill.push(i % 3, i);
  const churn = [...fill];
  for (let i = 0; i < 256; i += 2) churn.push(4, i);
  const raw = [];
  for (let i = 0; i < 64; i++) raw.push(0x80, ...Array.from({ length: 8 }, (_, j) => (i * 37 + j * 101) & 0xff));
  const reserving = [];
  for (let i = 0; i < 128; i++) reserving.push(i % 3, i, ...(i % 16 === 15 ? [0x87, 0xff, 0x0f, 0, 0, 0, 0, 0, 0] : []));
  const key = (i) => Array.from({ length: 8 }, (_, j) => (i * 53 + j * 29 + 1) & 0xff);
  const crowd = [];
  for (let i = 0; i < 8; i++) crowd.push(0x86, ...key(i));
  const crowdMidDrain = fill.slice(0, 2 * 60);
  for (let i = 0; i < 8; i++) crowdMidDrain.push(0x86, ...key(i), 3, i);
  bucketSeeds.push(Buffer.from(fill), Buffer.from(churn), Buffer.from(raw), Buffer.from(reserving), Buffer.from(crowd), Buffer.from(crowdMidDrain));
}

// --- router_event_decode: [u8 format][message], from the byte-for-byte Dynamo fixtures -------------
const dynamoFixtures = JSON.parse(fs.readFileSync(path.join(root, 'test', 'fixtures', 'dynamo', 'event-plane.json'), 'utf8')).messages;
const routerSeeds = [];
for (const f of dynamoFixtures) {
  const bytes = f.hex !== undefined ? Buffer.from(f.hex, 'hex') : Buffer.from(f.text, 'utf8');
  if (f.format === 'envelope') {
    routerSeeds.push(Buffer.concat([u8(0), bytes]));
    const header = Buffer.alloc(5);
    header[0] = 1;
    header.writeUInt32BE(bytes.length, 1);
    routerSeeds.push(Buffer.concat([u8(1), header, bytes]));
  } else if (f.format === 'json') {
    routerSeeds.push(Buffer.concat([u8(2), bytes]), Buffer.concat([u8(0), bytes]));
  } else {
    // A bare MessagePack RouterEvent, wrapped as the event plane sends it.
    const env = new Packr({ useRecords: false, variableMapSize: true });
    const envelope = env.pack({ publisher_id: 5, sequence: 0, published_at: 1, topic: 'kv-events', payload: bytes });
    routerSeeds.push(Buffer.concat([u8(0), envelope]));
  }
}

const counts = {
  cbi1: writeAll('cbi1', cbi1Seeds.filter((s) => s !== null)),
  pool_batch: writeAll('pool_batch', poolSeeds),
  engine_decode: writeAll('engine_decode', engineSeeds),
  bucket_map: writeAll('bucket_map', bucketSeeds),
  router_event_decode: writeAll('router_event_decode', routerSeeds),
};
console.log(`seeds: ${Object.entries(counts).map(([t, n]) => `${t} ${n}`).join(', ')}`);
