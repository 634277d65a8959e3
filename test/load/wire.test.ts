// The builders' output goes on the wire as is: it must encode and decode back unchanged, with the
// optional gauges absent (not zero) where the view leaves them unset.
import { MAX_U64 } from '../../src/config/limits';
import { buildPoolLoad, buildServingLoad } from '../../src/load';
import { decodeMessage, encodeMessage } from '../../src/wire/codec';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import type { KvPoolLoadUpdate, ServingLoadUpdate } from '../../src/wire/types';
import {
  validateKvPoolLoadEntry,
  validateKvPoolLoadUpdate,
  validateModelServingLoad,
  validatePoolServingLoad,
  validateServingLoadUpdate,
} from '../../src/wire/validate';
import { pool, worker } from './fixtures';

const envelope = { protocolVersion: RELAY_PROTOCOL_VERSION, relay: { drtInstanceId: 1n, relayIncarnation: 2n }, contractMarker: RELAY_CONTRACT_MARKER };
const window = { windowSequence: 7n, observedMs: 1_764_000_000_000n, windowMs: 1000n };

const pools = [
  pool(1, [worker(1n, { maxNumSeqs: 256, totalKvBlocks: Number.MAX_SAFE_INTEGER, dpSize: 4096 }), worker(2n, { totalKvBlocks: Number.MAX_SAFE_INTEGER, dpSize: 4096 })], { models: ['llama', 'llama-lora'] }),
  pool(2, [worker(3n, { live: false })], { namespace: 'dev' }),
];

test('pool load passes the wire validators and survives a KvPoolLoadUpdate encode/decode, saturated sums unchanged', () => {
  const update: KvPoolLoadUpdate = { ...envelope, ...window, pools: buildPoolLoad(pools, new Map()) };
  expect(update.pools[0].totalKvBlocks).toBe(MAX_U64);
  expect(validateKvPoolLoadUpdate(update)).toEqual({ ok: true });
  for (const entry of update.pools) expect(validateKvPoolLoadEntry(entry)).toEqual({ ok: true });
  expect(decodeMessage('KvPoolLoadUpdate', encodeMessage('KvPoolLoadUpdate', update))).toEqual(update);
});

test('serving load passes the wire validators and survives a ServingLoadUpdate encode/decode; unset gauges stay absent', () => {
  const update: ServingLoadUpdate = { ...envelope, ...window, ...buildServingLoad(pools) };
  expect(validateServingLoadUpdate(update)).toEqual({ ok: true });
  for (const p of update.pools) expect(validatePoolServingLoad(p)).toEqual({ ok: true });
  for (const m of update.models) expect(validateModelServingLoad(m)).toEqual({ ok: true });
  const decoded = decodeMessage('ServingLoadUpdate', encodeMessage('ServingLoadUpdate', update));
  expect(decoded).toEqual(update);
  expect(decoded.pools[0].load?.requests).toBeUndefined();
  expect(decoded.pools[0].load?.tokens).toBeDefined();
  expect(decoded.pools[0].load?.tokens?.activeDecodeBlocks).toBeUndefined();
  expect(decoded.pools[0].deployment).toEqual({ liveWorkers: 2n, maxConcurrency: undefined });
  expect(decoded.pools[1].deployment).toEqual({ liveWorkers: 0n, maxConcurrency: 0n });
  expect(decoded.models[0].load?.requests?.requestsGenerating).toBeUndefined();
  expect(decoded.models[0].load?.tokens?.inputTokensTotal).toBe(0n);
});
