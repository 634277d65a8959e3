// How RelayClient reacts to Relay errors, against a real grpc-js server whose handlers end streams
// with chosen statuses: the trailer reason decides, the status code is the fallback, the message
// text never matters.
import * as grpc from '@grpc/grpc-js';
import type { RelayClient } from '../../src/client/relay-client';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { RelayErrorReason } from '../../src/wire/enums';
import { RelayError } from '../../src/wire/errors';
import type { KvPoolCatalogUpdate } from '../../src/wire/types';
import { waitFor } from '../support/waitFor';
import { serve } from './fake-relay';
import { descriptor, RELAY } from './fixtures';
import { record, testClient } from './helpers';

const catalog = (revision: bigint): KvPoolCatalogUpdate => ({
  protocolVersion: RELAY_PROTOCOL_VERSION,
  relay: RELAY,
  revision,
  snapshot: { pools: [descriptor(1n)] },
  contractMarker: RELAY_CONTRACT_MARKER,
});

describe('RelayClient error handling', () => {
  let server: grpc.Server | undefined;
  let client: RelayClient | undefined;

  afterEach(() => {
    client?.close();
    client = undefined;
    server?.forceShutdown();
    server = undefined;
  });

  it('stops on INVALID_REQUEST and UNIMPLEMENTED, retries on a bare RESOURCE_EXHAUSTED whatever its text', async () => {
    const calls = { catalog: 0, readiness: 0, load: 0, servingLoad: 0 };
    const started = await serve({
      watchKvPoolCatalog: (call) => {
        calls.catalog++;
        call.emit('error', new RelayError(RelayErrorReason.INVALID_REQUEST, 'subscriber_id rejected').toGrpcStatus());
      },
      subscribeServingReadiness: (call) => {
        calls.readiness++;
        // The text names a reason the client must not act on; only the code counts here.
        call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: 'RELAY_ERROR_REASON_CONTRACT_MISMATCH' });
      },
      subscribeKvPoolLoad: (call) => {
        calls.load++;
        call.emit('error', new RelayError(RelayErrorReason.SUBSCRIBER_LAGGED, 'lagged').toGrpcStatus());
      },
      subscribeServingLoad: (call) => {
        calls.servingLoad++;
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'variant C relay' });
      },
    });
    server = started.server;
    client = testClient(started.address);
    const events = record(client);
    client.start();
    await waitFor(() => calls.readiness >= 4 && calls.load >= 4, 'several readiness and load attempts');
    expect(calls.catalog).toBe(1);
    expect(calls.servingLoad).toBe(1);
    const byPlane = (plane: string) => events.error.map((e) => e.args[0]).filter((e) => e.plane === plane);
    expect(byPlane('catalog')).toEqual([expect.objectContaining({ reason: 'RELAY_ERROR_REASON_INVALID_REQUEST', next: 'stop' })]);
    expect(byPlane('servingLoad')).toEqual([expect.objectContaining({ reason: 'UNIMPLEMENTED', next: 'stop' })]);
    expect(byPlane('readiness')[0]).toMatchObject({ reason: 'RESOURCE_EXHAUSTED', relayReason: undefined, next: 'retry' });
    expect(byPlane('load')[0]).toMatchObject({ reason: 'RELAY_ERROR_REASON_SUBSCRIBER_LAGGED', next: 'retry' });
  });

  it('waits for a catalog change after PRODUCER_CHANGED instead of retrying the same producer', async () => {
    let catalogCall: grpc.ServerWritableStream<unknown, unknown> | undefined;
    let poolCalls = 0;
    const started = await serve({
      watchKvPoolCatalog: (call) => {
        catalogCall = call;
        call.write(catalog(1n));
      },
      subscribeKvPool: (call) => {
        poolCalls++;
        call.emit('error', new RelayError(RelayErrorReason.PRODUCER_CHANGED, 'requested producer is no longer active').toGrpcStatus());
      },
    });
    server = started.server;
    client = testClient(started.address);
    const events = record(client);
    client.start();
    await waitFor(() => poolCalls === 1 && events.error.some((e) => e.args[0].plane === 'pool'), 'first rejection');
    await new Promise((resolve) => setTimeout(resolve, 300)); // several backoff periods: no retry may happen
    expect(poolCalls).toBe(1);
    expect(client.poolStates()[0].stream).toBe('waiting');
    expect(events.error.find((e) => e.args[0].plane === 'pool')!.args[0]).toMatchObject({ reason: 'RELAY_ERROR_REASON_PRODUCER_CHANGED', next: 'wait' });

    catalogCall!.write(catalog(2n)); // a new catalog revision listing the same producer
    await waitFor(() => poolCalls === 2, 'a retry after the catalog refresh');
  });

  it('keeps backing off a stream that fails right after its first valid message', async () => {
    const at: number[] = [];
    const started = await serve({
      subscribeServingReadiness: (call) => {
        at.push(Date.now());
        call.write({ protocolVersion: RELAY_PROTOCOL_VERSION, relay: RELAY, revision: 1n, entries: [], contractMarker: RELAY_CONTRACT_MARKER });
        call.emit('error', new RelayError(RelayErrorReason.SUBSCRIBER_LAGGED, 'lagged').toGrpcStatus());
      },
    });
    server = started.server;
    client = testClient(started.address);
    client.start();
    await waitFor(() => at.length >= 5, 'five readiness streams');
    // Delays stay at or above base / 2 with base 20, 40, 80, 160 ms: no reset after each first message.
    [10, 20, 40, 80].forEach((minimum, k) => expect(at[k + 1] - at[k]).toBeGreaterThanOrEqual(minimum - 1));
  });

  it('drops the catalog plane on an invalid catalog message, then reconnects', async () => {
    let catalogCalls = 0;
    const started = await serve({
      watchKvPoolCatalog: (call) => {
        catalogCalls++;
        call.write({ ...catalog(1n), protocolVersion: 2 });
      },
    });
    server = started.server;
    client = testClient(started.address);
    const events = record(client);
    client.start();
    await waitFor(() => catalogCalls >= 3, 'catalog reconnects');
    expect(client.catalog()).toBeUndefined();
    expect(events.error.find((e) => e.args[0].plane === 'catalog')!.args[0]).toMatchObject({ reason: 'ProtocolVersion', next: 'retry' });
  });
});
