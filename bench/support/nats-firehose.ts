// A NATS firehose in a process of its own (run as `node nats-firehose.js URL SUBJECT SOURCES`): one
// Dynamo KvEventPublisher per source (its own publisher id, sequences from 0), each sending small
// RouterEvents (one event: a store of a fresh 4-block chain, then its removal, 4096 distinct per
// source, round robin) in MessagePack envelopes as Dynamo's event plane does, as fast as the client
// takes them, until its stdin closes. Workers' ids are 1..SOURCES.
import { connect } from '@nats-io/transport-node';
import { envelopeMsgpack, routerEventMsgpack } from '../../test/support/dynamo-wire';

export const FIREHOSE_MESSAGES_PER_SOURCE = 4096;
export const FIREHOSE_BLOCKS = 4;

/** The distinct RouterEvent payloads of source `s` (worker id s + 1). */
export function firehosePayloads(s: number): Buffer[] {
  const out: Buffer[] = [];
  let x = BigInt(0x5eed + s) * 0x9e3779b97f4a7c15n;
  const next = (): bigint => (x = BigInt.asUintN(64, x * 6364136223846793005n + 1442695040888963407n));
  for (let i = 0; i < FIREHOSE_MESSAGES_PER_SOURCE / 2; i++) {
    const ids = Array.from({ length: FIREHOSE_BLOCKS }, () => next());
    const blocks = ids.map((blockHash) => ({ blockHash, tokensHash: next() }));
    const workerId = BigInt(s + 1);
    out.push(routerEventMsgpack({ workerId, residencyDomain: 'worker', eventId: 2 * i, data: { stored: { parentHash: null, blocks } } }));
    out.push(routerEventMsgpack({ workerId, residencyDomain: 'worker', eventId: 2 * i + 1, data: { removed: { blockHashes: ids } } }));
  }
  return out;
}

/** A sequence in rmp's smallest unsigned form (below 2^32 here). */
export function uint(x: number): Buffer {
  if (x <= 0x7f) return Buffer.of(x);
  if (x <= 0xff) return Buffer.of(0xcc, x);
  if (x <= 0xffff) return Buffer.of(0xcd, x >> 8, x & 0xff);
  const b = Buffer.alloc(5);
  b[0] = 0xce;
  b.writeUInt32BE(x, 1);
  return b;
}

/**
 * An envelope as its head (up to the sequence's value) and the rest: only the sequence is encoded per
 * message (rmp's smallest uint form, uint()), so the publisher is not the limit.
 */
export function splitEnvelope(publisherId: bigint, payload: Buffer): [Buffer, Buffer] {
  const whole = envelopeMsgpack({ publisherId, sequence: 0n, publishedAt: 1n, topic: 'kv-events', payload });
  const at = whole.indexOf('sequence') + 'sequence'.length;
  return [whole.subarray(0, at), whole.subarray(at + 1)];
}

async function main(): Promise<void> {
  const [url, subject, sources] = process.argv.slice(2);
  const n = Number(sources);
  const nc = await connect({ servers: url });
  const pieces = Array.from({ length: n }, (_, s) => firehosePayloads(s).map((p) => splitEnvelope(BigInt(1000 + s), p)));
  const sequences = Array.from({ length: n }, () => 0);
  let stopped = false;
  process.stdin.on('end', () => (stopped = true));
  process.stdin.resume();
  process.stderr.write('{"ready":true}\n');
  let i = 0;
  while (!stopped) {
    for (let k = 0; k < 256; k++, i++) {
      const s = i % n;
      const seq = sequences[s]++;
      const [head, tail] = pieces[s][seq % FIREHOSE_MESSAGES_PER_SOURCE];
      nc.publish(subject, Buffer.concat([head, uint(seq), tail]));
    }
    // Bounded in flight: the server has taken what was sent before the next round.
    await nc.flush();
  }
  await nc.close();
}

if (require.main === module) void main();
