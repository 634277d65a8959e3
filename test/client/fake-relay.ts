// A real grpc-js server on loopback whose KvEventRelay handlers are chosen by each test. GetRelayInfo
// answers with `relayInfo` (default: a valid envelope naming RELAY); streams without a handler answer
// UNIMPLEMENTED.
import * as grpc from '@grpc/grpc-js';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { serviceDefinition } from '../../src/wire/service';
import type { RelayInfo } from '../../src/wire/types';
import { RELAY } from './fixtures';

export type StreamHandler = (call: grpc.ServerWritableStream<unknown, unknown>) => void;

export interface FakeRelayHandlers {
  relayInfo?: () => RelayInfo | grpc.ServiceError | { code: grpc.status; details?: string };
  watchKvPoolCatalog?: StreamHandler;
  subscribeKvPool?: StreamHandler;
  subscribeServingReadiness?: StreamHandler;
  subscribeKvPoolLoad?: StreamHandler;
  subscribeServingLoad?: StreamHandler;
}

export const VALID_RELAY_INFO: RelayInfo = { protocolVersion: RELAY_PROTOCOL_VERSION, relay: RELAY, contractMarker: RELAY_CONTRACT_MARKER };

export async function serve(handlers: FakeRelayHandlers): Promise<{ address: string; server: grpc.Server }> {
  const server = new grpc.Server();
  const unimplemented: StreamHandler = (call) => call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'not here' });
  server.addService(serviceDefinition, {
    getRelayInfo: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      const answer = handlers.relayInfo?.() ?? VALID_RELAY_INFO;
      if ('code' in answer) cb(answer);
      else cb(null, answer);
    },
    watchKvPoolCatalog: handlers.watchKvPoolCatalog ?? unimplemented,
    subscribeKvPool: handlers.subscribeKvPool ?? unimplemented,
    subscribeServingReadiness: handlers.subscribeServingReadiness ?? unimplemented,
    subscribeKvPoolLoad: handlers.subscribeKvPoolLoad ?? unimplemented,
    subscribeServingLoad: handlers.subscribeServingLoad ?? unimplemented,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { address: `127.0.0.1:${port}`, server };
}
