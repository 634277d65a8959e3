// A relay on loopback (real gRPC server over a TestSource) and a recorder of RelayClient events.
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
