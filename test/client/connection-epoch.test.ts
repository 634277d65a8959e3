// Connection epochs of RelayClient over real loopback gRPC: GetRelayInfo fences every plane with one
// Relay identity; a restart with a new incarnation drops everything and reinstalls it.
import * as grpc from '@grpc/grpc-js';
import { startRelayServer } from '../../src/transport/server';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { poolKey } from '../../src/wire/producer-key';
import type { RelayIdentity } from '../../src/wire/types';
import { TestSource, testPoolId, testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { serve, VALID_RELAY_INFO } from './fake-relay';
import { RELAY } from './fixtures';
import { perTestResources, record, SERVER_RELAY, startRelay, testClient } from './helpers';

const KEY1 = poolKey(testPoolId(1));
const RESTARTED: RelayIdentity = { ...SERVER_RELAY, relayIncarnation: SERVER_RELAY.relayIncarnation + 1n };

describe('RelayClient connection epochs', () => {
  const t = perTestResources();

  it('drops every plane and replica when the relay restarts with a new incarnation, then reinstalls them with the new identity', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1 }));
    feed.publish([[1, 0x11n]]);
    source.poolLoadState = { pools: [{ producer: feed.producer, kvUsedBlocks: 5n, totalKvBlocks: 10n, kvObservedRanks: 1, kvExpectedRanks: 1 }] };
    t.server = await startRelay(source, { timing: { loadWindowMs: 50 } });
    const port = t.server.port;
    t.client = testClient(t.server.address);
    const events = record(t.client);
    t.client.start();
    await waitFor(() => t.client!.replica(KEY1) !== undefined && t.client!.load() !== undefined && t.client!.readiness() !== undefined, 'first epoch');
    expect(t.client.relayIdentity()).toEqual(SERVER_RELAY);
    expect(t.client.catalog()!.relay).toEqual(SERVER_RELAY);

    await t.server.shutdown();
    t.server = await startRelayServer({ source, bind: `127.0.0.1:${port}`, relay: RESTARTED, options: { timing: { loadWindowMs: 50 } } });
    await waitFor(() => t.client!.relayIdentity()?.relayIncarnation === RESTARTED.relayIncarnation, 'the new epoch', 10_000);
    await waitFor(() => t.client!.replica(KEY1) !== undefined && t.client!.load() !== undefined && t.client!.readiness() !== undefined, 'planes of the new epoch');

    expect(events.relay.map((e) => e.args[0])).toEqual([SERVER_RELAY, null, RESTARTED]);
    expect(events.error.map((e) => e.args[0])).toContainEqual(expect.objectContaining({ plane: 'relay', reason: 'RelayIdentityChanged', next: 'retry' }));
    for (const value of [t.client.catalog(), t.client.readiness(), t.client.load()]) expect(value!.relay).toEqual(RESTARTED);
    expect(events.replicaInvalidated).toHaveLength(1);
    expect(events.replicaInstalled).toHaveLength(2);
    expect(t.client.replica(KEY1)!.words![1]).toBe(0x11n);
    // Every plane value of the old epoch was withdrawn before the new epoch's arrived.
    const relayGone = events.relay[1].at;
    for (const plane of ['catalog', 'readiness', 'load'] as const) {
      const dropped = events[plane].findIndex((e) => e.args[0] === null);
      expect(dropped).toBeGreaterThan(0);
      expect(events[plane].slice(dropped + 1).every((e) => e.at >= relayGone && e.args[0]?.relay.relayIncarnation === RESTARTED.relayIncarnation)).toBe(true);
    }
  });

  it('ends the epoch when a plane carries another relay identity than GetRelayInfo named', async () => {
    const other: RelayIdentity = { ...RELAY, relayIncarnation: RELAY.relayIncarnation + 1n };
    let handshakes = 0;
    let catalogs = 0;
    const started = await serve({
      relayInfo: () => {
        handshakes++;
        return VALID_RELAY_INFO;
      },
      watchKvPoolCatalog: (call) => {
        catalogs++;
        call.write({ protocolVersion: RELAY_PROTOCOL_VERSION, relay: other, revision: 1n, snapshot: { pools: [] }, contractMarker: RELAY_CONTRACT_MARKER });
      },
    });
    t.fake = started.server;
    t.client = testClient(started.address, { servingLoad: false });
    const events = record(t.client);
    t.client.start();
    await waitFor(() => handshakes >= 3 && catalogs >= 3, 'repeated epochs');
    expect(t.client.catalog()).toBeUndefined();
    expect(events.catalog).toEqual([]);
    const relayErrors = events.error.map((e) => e.args[0]).filter((e) => e.plane === 'relay');
    expect(relayErrors[0]).toMatchObject({ reason: 'RelayIdentityChanged', next: 'retry' });
  });

  it('opens no plane when GetRelayInfo answers with another contract marker', async () => {
    let streams = 0;
    const counted = (call: grpc.ServerWritableStream<unknown, unknown>) => {
      streams++;
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'unused' });
    };
    const started = await serve({
      relayInfo: () => ({ ...VALID_RELAY_INFO, contractMarker: 0x1234 }),
      watchKvPoolCatalog: counted,
      subscribeServingReadiness: counted,
      subscribeKvPoolLoad: counted,
    });
    t.fake = started.server;
    t.client = testClient(started.address);
    const events = record(t.client);
    t.client.start();
    await waitFor(() => events.error.length > 0, 'the handshake verdict');
    expect(events.error.map((e) => e.args[0])).toEqual([expect.objectContaining({ plane: 'relay', reason: 'ContractMarker', next: 'stop' })]);
    expect(t.client.relayIdentity()).toBeUndefined();
    expect(streams).toBe(0);
  });

  it('retries GetRelayInfo with backoff until it answers', async () => {
    let handshakes = 0;
    const started = await serve({
      relayInfo: () => (++handshakes < 3 ? { code: grpc.status.UNAVAILABLE, details: 'starting' } : VALID_RELAY_INFO),
    });
    t.fake = started.server;
    t.client = testClient(started.address);
    const events = record(t.client);
    t.client.start();
    await waitFor(() => t.client!.relayIdentity() !== undefined, 'the third handshake');
    expect(handshakes).toBe(3);
    expect(events.error.map((e) => e.args[0]).filter((e) => e.plane === 'relay')).toEqual([
      expect.objectContaining({ reason: 'UNAVAILABLE', next: 'retry' }),
      expect.objectContaining({ reason: 'UNAVAILABLE', next: 'retry' }),
    ]);
  });

});
