// Dynamo's KV-event wire forms, written by serde's rules from Dynamo's structs
// (dynamo-event-plane-and-discovery.md §4, §5): rmp_serde::to_vec_named (structs as maps with field
// names in struct order, integers in their smallest form, None as nil, a unit variant as its name, a
// newtype variant as a 1-entry map, serialize_bytes as bin) and serde_json::to_vec. Checked byte for
// byte against the spec's rmp_serde / serde_json outputs in test/fixtures/dynamo/event-plane.json.

export type StorageTier = 'device' | 'host_pinned' | 'disk' | 'external';

export type EventData =
  | { stored: { parentHash: bigint | null; startPosition?: number | null; blocks: { blockHash: bigint; tokensHash: bigint }[] } }
  | { removed: { blockHashes: bigint[] } }
  | 'cleared';

export interface RouterEventSpec {
  workerId: bigint;
  /** Default 'device' (always written, as serde writes every non-skipped field). */
  storageTier?: StorageTier;
  /** Omitted when undefined (skip_serializing_if None); Dynamo's workers set 'worker'. */
  residencyDomain?: 'worker' | 'cache_owner';
  eventId: bigint | number;
  dpRank?: number;
  data: EventData;
}

export interface EnvelopeSpec {
  publisherId: bigint;
  sequence: bigint;
  publishedAt: bigint;
  topic: string;
  payload: Uint8Array;
}

// ---- MessagePack (rmp's smallest forms) ----

class Writer {
  private readonly parts: number[] = [];
  bytes(): Buffer {
    return Buffer.from(this.parts);
  }
  raw(b: ArrayLike<number>): this {
    for (let i = 0; i < b.length; i++) this.parts.push(b[i]);
    return this;
  }
  uint(v: bigint | number): this {
    const x = BigInt(v);
    if (x < 0n) throw new RangeError('unsigned only');
    if (x <= 0x7fn) return this.raw([Number(x)]);
    if (x <= 0xffn) return this.raw([0xcc, Number(x)]);
    if (x <= 0xffffn) return this.raw([0xcd, ...be(x, 2)]);
    if (x <= 0xffff_ffffn) return this.raw([0xce, ...be(x, 4)]);
    return this.raw([0xcf, ...be(x, 8)]);
  }
  nil(): this {
    return this.raw([0xc0]);
  }
  str(s: string): this {
    const b = Buffer.from(s, 'utf8');
    if (b.length < 32) this.raw([0xa0 | b.length]);
    else if (b.length < 256) this.raw([0xd9, b.length]);
    else this.raw([0xda, ...be(BigInt(b.length), 2)]);
    return this.raw(b);
  }
  bin(b: Uint8Array): this {
    if (b.length < 256) this.raw([0xc4, b.length]);
    else if (b.length < 65_536) this.raw([0xc5, ...be(BigInt(b.length), 2)]);
    else this.raw([0xc6, ...be(BigInt(b.length), 4)]);
    return this.raw(b);
  }
  map(n: number): this {
    return n < 16 ? this.raw([0x80 | n]) : this.raw([0xde, ...be(BigInt(n), 2)]);
  }
  array(n: number): this {
    return n < 16 ? this.raw([0x90 | n]) : n < 65_536 ? this.raw([0xdc, ...be(BigInt(n), 2)]) : this.raw([0xdd, ...be(BigInt(n), 4)]);
  }
}

function be(x: bigint, bytes: number): number[] {
  const out: number[] = [];
  for (let i = bytes - 1; i >= 0; i--) out.push(Number((x >> BigInt(8 * i)) & 0xffn));
  return out;
}

/** rmp_serde::to_vec_named(RouterEvent). */
export function routerEventMsgpack(ev: RouterEventSpec): Buffer {
  const w = new Writer();
  const hasDomain = ev.residencyDomain !== undefined;
  w.map(hasDomain ? 4 : 3);
  w.str('worker_id').uint(ev.workerId);
  w.str('storage_tier').str(ev.storageTier ?? 'device');
  if (hasDomain) w.str('residency_domain').str(ev.residencyDomain!);
  w.str('event').map(3);
  w.str('event_id').uint(ev.eventId);
  w.str('data');
  const d = ev.data;
  if (d === 'cleared') {
    w.str('cleared');
  } else if ('stored' in d) {
    w.map(1).str('stored').map(3);
    w.str('parent_hash');
    if (d.stored.parentHash === null) w.nil();
    else w.uint(d.stored.parentHash);
    w.str('start_position');
    if (d.stored.startPosition == null) w.nil();
    else w.uint(d.stored.startPosition);
    w.str('blocks').array(d.stored.blocks.length);
    for (const b of d.stored.blocks) w.map(3).str('block_hash').uint(b.blockHash).str('tokens_hash').uint(b.tokensHash).str('mm_extra_info').nil();
  } else {
    w.map(1).str('removed').map(1).str('block_hashes').array(d.removed.blockHashes.length);
    for (const h of d.removed.blockHashes) w.uint(h);
  }
  w.str('dp_rank').uint(ev.dpRank ?? 0);
  return w.bytes();
}

/** rmp_serde::to_vec_named(ActiveLoad) (protocols.rs: worker_id, dp_rank, active_decode_blocks?, active_prefill_tokens?, kv_used_blocks?). */
export function activeLoadMsgpack(l: { workerId: bigint; dpRank: number; kvUsedBlocks?: number }): Buffer {
  const w = new Writer().map(5).str('worker_id').uint(l.workerId).str('dp_rank').uint(l.dpRank).str('active_decode_blocks').nil().str('active_prefill_tokens').nil().str('kv_used_blocks');
  if (l.kvUsedBlocks === undefined) w.nil();
  else w.uint(l.kvUsedBlocks);
  return w.bytes();
}

/** serde_json::to_vec(RouterEvent) (the JetStream publisher's form). */
export function routerEventJson(ev: RouterEventSpec): string {
  const parts = [`"worker_id":${ev.workerId}`, `"storage_tier":"${ev.storageTier ?? 'device'}"`];
  if (ev.residencyDomain !== undefined) parts.push(`"residency_domain":"${ev.residencyDomain}"`);
  const d = ev.data;
  let data: string;
  if (d === 'cleared') {
    data = '"cleared"';
  } else if ('stored' in d) {
    const blocks = d.stored.blocks.map((b) => `{"block_hash":${b.blockHash},"tokens_hash":${b.tokensHash},"mm_extra_info":null}`).join(',');
    data = `{"stored":{"parent_hash":${d.stored.parentHash ?? 'null'},"start_position":${d.stored.startPosition ?? 'null'},"blocks":[${blocks}]}}`;
  } else {
    data = `{"removed":{"block_hashes":[${d.removed.blockHashes.join(',')}]}}`;
  }
  parts.push(`"event":{"event_id":${ev.eventId},"data":${data},"dp_rank":${ev.dpRank ?? 0}}`);
  return `{${parts.join(',')}}`;
}

/** rmp_serde::to_vec_named(EventEnvelope) (dynamo-runtime 0.9 / 1.1 field order). */
export function envelopeMsgpack(e: EnvelopeSpec): Buffer {
  return new Writer()
    .map(5)
    .str('publisher_id')
    .uint(e.publisherId)
    .str('sequence')
    .uint(e.sequence)
    .str('published_at')
    .uint(e.publishedAt)
    .str('topic')
    .str(e.topic)
    .str('payload')
    .bin(e.payload)
    .bytes();
}

/** The ZMQ event plane's data frame (§5.4): version 1, payload length u32 big-endian, the envelope. */
export function zmqFrame(envelope: Uint8Array): Buffer {
  const header = Buffer.alloc(5);
  header[0] = 1;
  header.writeUInt32BE(envelope.length, 1);
  return Buffer.concat([header, envelope]);
}

/** A u64 as 8 big-endian bytes (the ZMQ frames' publisher id and sequence). */
export function u64be(x: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(x);
  return b;
}

/** Dynamo's publisher ids: random, masked to 53 bits (MAX_JSON_SAFE_PUBLISHER_ID). */
export function randomPublisherId(): bigint {
  return BigInt.asUintN(53, BigInt(Math.floor(Math.random() * 2 ** 32)) * 2n ** 32n + BigInt(Math.floor(Math.random() * 2 ** 32)));
}
