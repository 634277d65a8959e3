// A relay on loopback (real gRPC server over a TestSource), a recorder of RelayClient events, and
// per-test resources closed after each test.
import type * as grpc from '@grpc/grpc-js';
import type { ServiceOptionsInput } from '../../src/config/defaults';
import { RelayClient, type RelayClientEvents, type RelayClientOptions } from '../../src/client/relay-client';
import { startRelayServer, type RelayServer } from '../../src/transport/server';
import type { RelayIdentity } from '../../src/wire/types';
import { TestSource } from '../support/test-source';

export const SERVER_RELAY: RelayIdentity = { drtInstanceId: 0x0a0b_0c0dn, relayIncarnation: 0x5eed_0001n };

export async function startRelay(source: TestSource, options: ServiceOptionsInput = {}, port = 0): Promise<RelayServer> {
  return startRelayServer({ source, bind: `127.0.0.1:${port}`, relay: SERVER_RELAY, options });
}

type Recorded = { [K in keyof RelayClientEvents]: Array<{ at: number; args: RelayClientEvents[K] }> };

/** Every event the client emits, with its arrival time. */
export function record(client: RelayClient): Recorded {
  const names: Array<keyof RelayClientEvents> = ['relay', 'catalog', 'readiness', 'load', 'servingLoad', 'replicaInstalled', 'replicaInvalidated', 'delta', 'error'];
  const out = Object.fromEntries(names.map((n) => [n, []])) as unknown as Recorded;
  for (const name of names) {
    client.on(name, (...args: unknown[]) => (out[name] as Array<{ at: number; args: unknown[] }>).push({ at: Date.now(), args }));
  }
  return out;
}

/** Fast backoff so reconnect tests stay short; same shape as the 100 ms → 5 s default. */
export function testClient(address: string, options: Partial<RelayClientOptions> = {}): RelayClient {
  return new RelayClient(address, { subscriberId: 'client-test', backoff: { initialMs: 20, maxMs: 200 }, ...options });
}

export interface TestResources {
  server?: RelayServer;
  /** A hand-written relay (fake-relay.ts). */
  fake?: grpc.Server;
  client?: RelayClient;
}

/** Resources a test sets; after each test the client is closed and both servers are shut down. */
export function perTestResources(): TestResources {
  const t: TestResources = {};
  afterEach(async () => {
    t.client?.close();
    await t.server?.shutdown();
    t.fake?.forceShutdown();
    delete t.client;
    delete t.server;
    delete t.fake;
  });
  return t;
}
