// The test publishers write exactly what Dynamo's do: each fixture is rmp_serde / serde_json output
// quoted in the spec (dynamo-event-plane-and-discovery.md §4, §5.1; test/fixtures/dynamo/event-plane.json
// names where each came from), and the native decoder reads each back field for field.
import * as fs from 'fs';
import * as path from 'path';
import { RouterEventBatchDecoder, routerEventRecord as R, recordU64, type RouterEventFormat } from '../../src/native';
import { envelopeMsgpack, routerEventJson, routerEventMsgpack, type RouterEventSpec } from '../support/dynamo-wire';

interface FixtureEvent {
  workerId: string;
  residencyDomain?: 'worker';
  eventId: number;
  dpRank: number;
  stored?: { parentHash: null; startPosition: null; blocks: { blockHash: string; tokensHash: string }[] };
  cleared?: true;
}
interface Fixture {
  name: string;
  format: 'routerEvent' | 'envelope' | 'json';
  hex?: string;
  text?: string;
  event?: FixtureEvent;
  envelope?: { publisherId: string; sequence: string; publishedAt: string; topic: string };
}

const fixtures = (JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'dynamo', 'event-plane.json'), 'utf8')) as { messages: Fixture[] }).messages;

function spec(e: FixtureEvent): RouterEventSpec {
  return {
    workerId: BigInt(e.workerId),
    storageTier: 'device',
    residencyDomain: e.residencyDomain,
    eventId: e.eventId,
    dpRank: e.dpRank,
    data: e.cleared
      ? 'cleared'
      : { stored: { parentHash: null, startPosition: null, blocks: e.stored!.blocks.map((b) => ({ blockHash: BigInt(b.blockHash), tokensHash: BigInt(b.tokensHash) })) } },
  };
}

function bytesOf(f: Fixture): Buffer {
  return f.hex !== undefined ? Buffer.from(f.hex, 'hex') : Buffer.from(f.text!, 'utf8');
}

function decodeOne(message: Uint8Array, format: RouterEventFormat) {
  const decoder = new RouterEventBatchDecoder('kv-events');
  const batch = decoder.decode(message, Uint32Array.of(message.length), 1, format);
  return { batch, error: decoder.errorOf(0) };
}

describe('Dynamo wire fixtures', () => {
  it.each(fixtures.filter((f) => f.format === 'routerEvent').map((f) => [f.name, f]))('%s: the publisher writes the fixture bytes', (_n, f) => {
    expect(routerEventMsgpack(spec(f.event!)).toString('hex')).toBe(f.hex);
  });

  it.each(fixtures.filter((f) => f.format === 'json').map((f) => [f.name, f]))('%s: the JetStream publisher writes the fixture text', (_n, f) => {
    expect(routerEventJson(spec(f.event!))).toBe(f.text);
  });

  it('envelope-cleared: the envelope publisher writes the fixture bytes around the cleared event', () => {
    const f = fixtures.find((x) => x.name === 'envelope-cleared')!;
    const cleared = fixtures.find((x) => x.name === 'router-event-cleared-msgpack')!;
    const e = f.envelope!;
    const bytes = envelopeMsgpack({
      publisherId: BigInt(e.publisherId),
      sequence: BigInt(e.sequence),
      publishedAt: BigInt(e.publishedAt),
      topic: e.topic,
      payload: Buffer.from(cleared.hex!, 'hex'),
    });
    expect(bytes.toString('hex')).toBe(f.hex);
  });

  it('the native decoder reads the envelope fixture: publisher, sequence and the cleared event', () => {
    const f = fixtures.find((x) => x.name === 'envelope-cleared')!;
    const { batch } = decodeOne(bytesOf(f), 'envelope');
    const r = batch.records;
    expect(r[R.status]).toBe(R.ok);
    expect(r[R.flags] & R.hasEnvelope).toBe(R.hasEnvelope);
    expect(r[R.flags] & R.counted).toBe(R.counted);
    expect(recordU64(r, R.publisherLo)).toBe(8776565086972537n);
    expect(recordU64(r, R.sequenceLo)).toBe(3n);
    expect(recordU64(r, R.workerLo)).toBe(4321100813102084358n);
    expect(recordU64(r, R.eventIdLo)).toBe(9n);
    expect(r[R.dpRank]).toBe(1);
    // packed: [kind cleared = 3, rank 1, flags 0, start 0, count 0], words [worker]
    expect([...batch.meta]).toEqual([3, 1, 0, 0, 0]);
    expect([...batch.words]).toEqual([4321100813102084358n]);
  });

  it.each([
    ['router-event-stored-json', 'json'],
    ['router-event-stored-msgpack', 'payload'],
  ])('%s decodes to a root store of block 1 with tokens hash 2', (name, how) => {
    const f = fixtures.find((x) => x.name === name)!;
    const message =
      how === 'json' ? bytesOf(f) : envelopeMsgpack({ publisherId: 5n, sequence: 0n, publishedAt: 1n, topic: 'kv-events', payload: bytesOf(f) });
    const { batch, error } = decodeOne(message, how === 'json' ? 'json' : 'envelope');
    expect(error).toBe('');
    expect(batch.records[R.status]).toBe(R.ok);
    expect(batch.records[R.kind]).toBe(1);
    expect(batch.records[R.blocks]).toBe(1);
    expect([...batch.meta]).toEqual([1, 0, 0, 0, 1]);
    expect([...batch.words]).toEqual([4321100813102084358n, 1n, 2n]);
  });
});
