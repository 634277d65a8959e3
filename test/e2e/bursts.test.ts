// Bursts of engine messages (a live backlog, a long replay) against a consumer that keeps up: the
// relay must not drain a whole backlog in one event-loop turn, or its deltas pile up unsent and the
// healthy subscriber is dropped as lagged (publication queue: 16 frames).
import type { ClientErrorEvent } from '../../src/client';
import { metricSum } from '../support/relay-process';
import { BS, E2e, endpointConfig, expectedHashes, metricValue, relayConfig, tokenRange, workerConfig } from './harness';

const BURST = 1000;

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

function block(i: number): { tokens: number[]; event: { type: 'BlockStored'; blockHashes: bigint[]; parentBlockHash: null; tokenIds: number[]; blockSize: number } } {
  const tokens = tokenRange(10 + i * BS, BS);
  return { tokens, event: { type: 'BlockStored', blockHashes: [BigInt(i + 1)], parentBlockHash: null, tokenIds: tokens, blockSize: BS } };
}

async function expectNoLag(pool: string, errors: ClientErrorEvent[]): Promise<void> {
  await run.awaitHeld(pool, [0, BURST / 2, BURST - 1].flatMap((i) => expectedHashes(block(i).tokens)), 'the burst in the replica');
  expect(errors.map((e) => e.reason)).toEqual([]);
  expect(metricValue(await run.metricsText(), 'kv_dc_relay_subscriber_lagged_total', 'stream="pool"')).toBe(0);
}

test('a burst of live batches reaches a subscriber that keeps up without lagging it', async () => {
  const engine = await run.engine();
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine)])]));
  const pool = await run.poolKey();
  const errors: ClientErrorEvent[] = [];
  run.client.on('error', (e) => errors.push(e));

  await Promise.all(Array.from({ length: BURST }, (_, i) => engine.publish([block(i).event])));
  await expectNoLag(pool, errors);
  // Every delta carried engine messages: each is one observation of the relay's event→delta share.
  const text = await run.metricsText();
  const published = metricSum(text, 'kv_dc_relay_pool_deltas_published_total'); // the one pool's
  expect(published).toBeGreaterThan(0);
  expect(metricValue(text, 'kv_dc_relay_pool_delta_latency_seconds_count', '')).toBe(published);
  expect(metricValue(text, 'kv_dc_relay_pool_delta_latency_seconds_sum', '')).toBeGreaterThan(0);
  expect(metricValue(text, 'kv_dc_relay_pool_delta_latency_seconds_bucket', 'le="+Inf"')).toBe(published);
  // By stage: each delta observed once per stage, and the stages add up to the whole.
  const stageSums = ['handoff', 'pool'].map((stage) => {
    expect(metricValue(text, 'kv_dc_relay_pool_delta_stage_seconds_count', `stage="${stage}"`)).toBe(published);
    return metricValue(text, 'kv_dc_relay_pool_delta_stage_seconds_sum', `stage="${stage}"`);
  });
  expect(stageSums.every((sum) => sum > 0)).toBe(true);
  expect(stageSums[0] + stageSums[1]).toBeCloseTo(metricValue(text, 'kv_dc_relay_pool_delta_latency_seconds_sum', ''), 6);
});

test('a long replay reaches a subscriber that keeps up without lagging it', async () => {
  const before = await run.engine();
  await run.start(relayConfig([endpointConfig([workerConfig(7, before)])]));
  const pool = await run.poolKey();
  const errors: ClientErrorEvent[] = [];
  run.client.on('error', (e) => errors.push(e));

  // The engine restarts on the same ports with a full buffer: the relay replays it from 0.
  await before.stop();
  const port = (endpoint: string | undefined): number => Number(/:(\d+)$/.exec(endpoint ?? '')![1]);
  const after = await run.engine({ port: port(before.pubEndpoint), replayPort: port(before.replayEndpoint) });
  // Buffered only; a last live batch covers a relay that reconnected halfway (a gap: replay from there).
  for (let i = 0; i < BURST - 1; i++) await after.publish([block(i).event], { dropLive: true });
  await after.publish([block(BURST - 1).event]);
  await expectNoLag(pool, errors);
});
