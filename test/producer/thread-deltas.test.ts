// Deltas of pools hosted on ingest threads (pool-host.ts: applied, drained and cut on the thread, then
// handed to the event loop, which serves the gRPC streams) reach real gRPC subscribers: every frame
// is what the codec writes for its decoded message (the wire is unchanged), names this relay and
// its pool's producer, and each stream's deltas are contiguous over many pools and turns. A
// subscriber that stops reading still lags alone with SUBSCRIBER_LAGGED.
import { FilterUpdateKind } from '../../src/wire/enums';
import { encodeMessage } from '../../src/wire/codec';
import type { FilterUpdate, ProducerIdentity } from '../../src/wire/types';
import { BS, E2e, endpointConfig, expectedHashes, relayConfig, tokenRange, workerConfig } from '../e2e/harness';
import { subscriber } from '../transport/helpers';
import { rawCall, RawSessions, type RawCall } from '../transport/raw-client';
import { waitFor } from '../support/waitFor';

const COMPONENTS = ['a', 'b', 'c'];

let run: E2e;
const sessions = new RawSessions();
beforeEach(() => (run = new E2e()));
afterEach(async () => {
  sessions.destroyAll();
  await run.close();
});

function producerOf(component: string): ProducerIdentity {
  const producer = run.client.catalog()?.pools.find((p) => p.descriptor.servingEndpoint?.component === component)?.descriptor.producer;
  if (!producer) throw new Error(`no producer for ${component}`);
  return producer;
}

function subscribe(producer: ProducerIdentity, id: string): RawCall<'FilterUpdate'> {
  return rawCall(sessions.connect(run.address), 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber(id), expectedProducer: producer }, 'FilterUpdate');
}

/** Every frame re-encodes to its own bytes, names this relay and `producer`; deltas continue each other from the snapshot. */
function expectFrames(call: RawCall<'FilterUpdate'>, producer: ProducerIdentity): FilterUpdate[] {
  const raw = call.rawMessages();
  const messages = call.messages();
  expect(raw.length).toBe(messages.length);
  let sequence: bigint | undefined;
  for (let i = 0; i < messages.length; i += 1) {
    const m = messages[i];
    expect(Buffer.compare(encodeMessage('FilterUpdate', m), raw[i])).toBe(0);
    expect(m.relay).toEqual(run.relay.relay);
    expect(m.producer).toEqual(producer);
    if (m.kind === FilterUpdateKind.SNAPSHOT_CHUNK) sequence = m.sequence;
    else if (m.kind === FilterUpdateKind.DELTA) {
      expect(m.baseSequence).toBe(sequence);
      expect(m.sequence).toBe(m.baseSequence + 1n);
      sequence = m.sequence;
    }
  }
  return messages.filter((m) => m.kind === FilterUpdateKind.DELTA);
}

test('three pools on two ingest threads: every delta frame is the codec\'s bytes, names its producer, and continues the last', async () => {
  const engines = await Promise.all(COMPONENTS.map(() => run.engine()));
  await run.start(
    relayConfig(
      COMPONENTS.map((component, i) => endpointConfig([workerConfig(10 + i, engines[i])], { component, model: { name: `m-${component}` } })),
      { limits: { ingestThreads: 2 } },
    ),
  );
  const keys = await Promise.all(COMPONENTS.map((c) => run.poolKey(c)));
  const producers = COMPONENTS.map(producerOf);
  const calls = producers.map((p, i) => subscribe(p, `raw-${i}`));
  for (const call of calls) call.resume();
  await waitFor(() => calls.every((c) => c.messages().some((m) => m.kind === FilterUpdateKind.SNAPSHOT_CHUNK)), 'every raw stream\'s snapshot', 10_000, 20);

  // 24 chain steps, each sent to the three engines together: the pools' deltas cross from both
  // threads close together, and each pool publishes at least one delta per step.
  const chains = COMPONENTS.map((_, i) => tokenRange(1000 * (i + 1), 24 * BS));
  const last = (c: RawCall<'FilterUpdate'>): bigint | undefined => c.messages().at(-1)?.sequence;
  for (let step = 0; step < 24; step += 1) {
    const before = calls.map(last);
    await Promise.all(
      engines.map((engine, i) => {
        const tokens = chains[i].slice(step * BS, (step + 1) * BS);
        return engine.publish([{ type: 'BlockStored', blockHashes: [BigInt(step + 1)], parentBlockHash: step === 0 ? null : BigInt(step), tokenIds: tokens, blockSize: BS }]);
      }),
    );
    await waitFor(() => calls.every((c, i) => last(c) !== before[i]), `step ${step}'s delta on every raw stream`, 10_000, 5);
  }
  for (let i = 0; i < keys.length; i += 1) await run.awaitHeld(keys[i], expectedHashes(chains[i]), `every block of pool ${COMPONENTS[i]}`);
  // The raw streams took the deltas the consumer's replica was built from.
  const published = (i: number): bigint | undefined => run.client.replica(keys[i])?.sequence;
  await waitFor(() => calls.every((c, i) => c.messages().at(-1)?.sequence === published(i)), 'every raw stream up to its pool\'s sequence', 10_000, 20);
  for (let i = 0; i < calls.length; i += 1) expect(expectFrames(calls[i], producers[i]).length).toBeGreaterThanOrEqual(24);
});

test('a subscriber of a thread-hosted pool that stops reading lags alone; what it took is contiguous', async () => {
  const engine = await run.engine();
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)], { component: 'a' })], { limits: { ingestThreads: 1 }, queues: { publicationQueueCapacity: 4 } }));
  const key = await run.poolKey('a');
  const producer = producerOf('a');
  const slow = subscribe(producer, 'slow');
  await slow.headers; // its snapshot is being written; it never reads
  const lagged = (): number => run.relay.server.stats().laggedTotal.pool;

  // 64 fresh blocks per message, 63 of them removed by the next (the pool stays small), until it
  // lags: pacing first stretches the publication slice for it (publication/pacing.ts), for at most
  // its pause budget.
  let step = 0;
  let tokens: number[] = [];
  const deadline = Date.now() + 30_000;
  while (lagged() === 0 && Date.now() < deadline) {
    tokens = tokenRange(1 + step * 64 * BS, 64 * BS);
    const blocks = Array.from({ length: 64 }, (_, b) => BigInt(step * 64 + b + 1));
    await engine.publish([{ type: 'BlockStored', blockHashes: blocks, parentBlockHash: null, tokenIds: tokens, blockSize: BS }]);
    await engine.publish([{ type: 'BlockRemoved', blockHashes: blocks.slice(0, 63) }]);
    step += 1;
  }
  expect(lagged()).toBe(1);
  slow.resume();
  const end = await slow.end();
  expect(end.reason).toBe('RELAY_ERROR_REASON_SUBSCRIBER_LAGGED');
  expectFrames(slow, producer);
  // The harness's consumer kept up: it holds the last block kept of each step.
  await run.awaitHeld(key, expectedHashes(tokens).slice(-1), 'the last step\'s kept block');
});
