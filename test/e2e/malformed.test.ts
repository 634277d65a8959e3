// Malformed engine input against a relay process: wrong framing and msgpack garbage are counted
// on /metrics, the process stays up and serving, and later good events are still applied.
import { Packr } from 'msgpackr';
import { BS, E2e, endpointConfig, expectedHashes, metricValue, relayConfig, tokenRange, workerConfig } from './harness';

const W7 = 'worker="7",dp_rank="0"';

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

test('malformed frames and msgpack garbage are counted; the relay stays up and keeps applying events', async () => {
  const engine = await run.engine();
  const relay = await run.startProcess(relayConfig([endpointConfig([workerConfig(7, engine)])]));
  const pool = await run.poolKey();

  const first = tokenRange(100, BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: first, blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(first), 'the block before the garbage');

  const packr = new Packr({ useRecords: false });
  const topic = Buffer.alloc(0);
  const seq = Buffer.alloc(8);
  // Framing errors: no sequence is consumed.
  await engine.publishRaw([topic, seq]);
  await engine.publishRaw([topic, Buffer.from([0, 0, 1]), packr.pack([0, [], 0])]);
  // Payload errors under the next sequence numbers (so no gap follows).
  const payloads = [
    Buffer.from([0xc1]), // a byte msgpack never uses
    Buffer.from([0xdc, 0x00]), // a truncated array header
    Buffer.from('not msgpack at all'),
    packr.pack({ hello: 'world' }), // valid msgpack, not an event batch
    packr.pack([Date.now() / 1000, [['BlockStored', 'not-a-list', null, [1, 2, 3, 4], BS]], 0]), // wrong field types
  ];
  for (const p of payloads) await engine.publishPayload(p);
  const malformed = 2 + payloads.length;

  // A good child event after the garbage finds its parent: nothing of the source was lost.
  const next = tokenRange(100, 2 * BS);
  await engine.publish([{ type: 'BlockStored', blockHashes: [2n], parentBlockHash: 1n, tokenIds: next.slice(BS), blockSize: BS }]);
  await run.awaitHeld(pool, expectedHashes(next), 'the good event after the garbage');

  // The source's messages are handled in order, so every earlier one has been counted by now.
  const metrics = await run.metricsText();
  expect(metricValue(metrics, 'kv_dc_relay_ingest_malformed_total', W7)).toBe(malformed);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_gaps_total', W7)).toBe(0);
  expect(metricValue(metrics, 'kv_dc_relay_ingest_resets_total', W7)).toBe(0);
  expect(relay.exitCode).toBeNull();
  expect(run.depth('llama', next)).toBe(2);
});
