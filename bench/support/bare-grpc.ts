// The bare gRPC baselines: a grpc-js server of the relay's service whose only work is to hand
// SubscribeKvPool calls to the bench, and clients that read the response bytes undecoded.
import * as grpc from '@grpc/grpc-js';
import { listen } from '../../src/transport/listener';
import { serviceDefinition } from '../../src/wire/service';

export interface BareServer {
  address: string;
  close(): Promise<void>;
}

/** A grpc-js server on loopback; `onSubscribe` gets each SubscribeKvPool call (other RPCs end at once). */
export async function startBareServer(onSubscribe: (call: grpc.ServerWritableStream<unknown, unknown>) => void): Promise<BareServer> {
  const server = new grpc.Server({ 'grpc.max_send_message_length': 8 << 20 });
  const unimplemented: grpc.handleServerStreamingCall<unknown, unknown> = (call) => call.end();
  server.addService(serviceDefinition, {
    getRelayInfo: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, Buffer.alloc(0)),
    watchKvPoolCatalog: unimplemented,
    subscribeServingReadiness: unimplemented,
    subscribeKvPoolLoad: unimplemented,
    subscribeServingLoad: unimplemented,
    subscribeKvPool: onSubscribe,
  });
  // Same TCP settings as the relay (Nagle off), so only the relay's own work differs.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const listener = await listen('127.0.0.1:0', (socket) => injector.injectConnection(socket));
  return {
    address: listener.address,
    close: async () => {
      await listener.close(0);
      server.forceShutdown();
    },
  };
}

/** Clients whose stream messages are the raw response bytes (up to the relay's 8 MiB frames); `options` adds channel options. */
export function rawClients(address: string, n: number, options: grpc.ChannelOptions = {}): grpc.Client[] {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(serviceDefinition)) {
    definition[name] = { ...method, responseDeserialize: (bytes: Buffer) => bytes };
  }
  const Client = grpc.makeGenericClientConstructor(definition, 'KvEventRelayBench');
  return Array.from({ length: n }, () => new Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'grpc.max_receive_message_length': 8 << 20, ...options }));
}
