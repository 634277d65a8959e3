// The grpc-js glue over real loopback gRPC: typed client ↔ service definition, pre-encoded Buffer
// responses, reason trailers in trailers-only and mid-stream errors, and the reflection descriptor.
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { encodeMessage } from '../../src/wire/codec';
import { ERROR_REASON_TRAILER, RELAY_CONTRACT_MARKER, RELAY_SERVICE_NAME } from '../../src/wire/constants';
import { FilterUpdateKind, RelayErrorReason } from '../../src/wire/enums';
import { RelayError, relayErrorReason } from '../../src/wire/errors';
import { relayReflectionPackageDefinition } from '../../src/wire/proto';
import { getRelayInfo, makeClient, serviceDefinition, type KvEventRelayClient, type KvEventRelayHandlers } from '../../src/wire/service';
import type { FilterUpdate, RelayInfo } from '../../src/wire/types';
import { MARKER, RELAY, producer } from './fixtures';

const U64_MAX = (1n << 64n) - 1n;

function frame(sequence: bigint): FilterUpdate {
  return {
    protocolVersion: 1, relay: RELAY, producer: producer(), baseSequence: sequence, sequence,
    sendTsUs: U64_MAX, kind: FilterUpdateKind.SNAPSHOT_CHUNK, payload: Buffer.from('CBI1'), contractMarker: MARKER,
  };
}

const unimplemented = (call: grpc.ServerWritableStream<unknown, unknown>) =>
  call.emit('error', new RelayError(RelayErrorReason.INTERNAL, 'not in this test').toGrpcStatus());

const handlers: KvEventRelayHandlers = {
  getRelayInfo(call, callback) {
    if (call.request.contractMarker !== RELAY_CONTRACT_MARKER) {
      callback(new RelayError(RelayErrorReason.CONTRACT_MISMATCH, 'unsupported Relay v1 wire contract').toGrpcStatus());
      return;
    }
    callback(null, { protocolVersion: 1, relay: RELAY, contractMarker: MARKER });
  },
  subscribeKvPool(call) {
    // One frame as a plain object, one pre-encoded, then a reason in the trailers.
    call.write(frame(1n));
    call.write(encodeMessage('FilterUpdate', frame(2n)));
    call.emit('error', new RelayError(RelayErrorReason.SUBSCRIBER_LAGGED, 'lagged').toGrpcStatus());
  },
  watchKvPoolCatalog: unimplemented,
  subscribeServingReadiness: unimplemented,
  subscribeKvPoolLoad: unimplemented,
  subscribeServingLoad(call) {
    call.write({ protocolVersion: 1, relay: RELAY, windowSequence: 0n, observedMs: 0n, windowMs: 10n, pools: [], models: [], contractMarker: MARKER });
    call.end();
  },
};

let server: grpc.Server;
let client: KvEventRelayClient;

beforeAll(async () => {
  server = new grpc.Server();
  server.addService(serviceDefinition, handlers);
  new ReflectionService(relayReflectionPackageDefinition as never).addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  client = makeClient(`127.0.0.1:${port}`);
});

afterAll(() => {
  client.close();
  server.forceShutdown();
});

test('GetRelayInfo round-trips bigint identities', async () => {
  const info: RelayInfo = await getRelayInfo(client, { contractMarker: MARKER }, { deadline: Date.now() + 5000 });
  expect(info).toEqual({ protocolVersion: 1, relay: RELAY, contractMarker: MARKER });
});

test('a wrong marker fails with FAILED_PRECONDITION and the CONTRACT_MISMATCH trailer', async () => {
  const err = await getRelayInfo(client, { contractMarker: 0 }).then(
    () => undefined,
    (e: grpc.ServiceError) => e,
  );
  expect(err?.code).toBe(grpc.status.FAILED_PRECONDITION);
  expect(err?.metadata.get(ERROR_REASON_TRAILER)).toEqual(['RELAY_ERROR_REASON_CONTRACT_MISMATCH']);
  expect(relayErrorReason(err!)).toBe(RelayErrorReason.CONTRACT_MISMATCH);
});

test('a stream carries plain and pre-encoded frames identically, then the reason trailer', async () => {
  const call = client.subscribeKvPool({ subscriberId: 'test', expectedProducer: producer(), contractMarker: MARKER });
  const frames: FilterUpdate[] = [];
  call.on('data', (f: FilterUpdate) => frames.push(f));
  const err = await new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
  expect(frames.map((f) => ({ ...f, payload: Buffer.from(f.payload) }))).toEqual([frame(1n), frame(2n)]);
  expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  expect(relayErrorReason(err)).toBe(RelayErrorReason.SUBSCRIBER_LAGGED);
});

test('serving load stream (variant S RPC) is served', async () => {
  const call = client.subscribeServingLoad({ subscriberId: 'test', contractMarker: MARKER });
  const windows: unknown[] = [];
  call.on('data', (w) => windows.push(w));
  await new Promise((resolve) => call.on('end', resolve));
  expect(windows).toEqual([{ protocolVersion: 1, relay: RELAY, windowSequence: 0n, observedMs: 0n, windowMs: 10n, pools: [], models: [], contractMarker: MARKER }]);
});

test('gRPC reflection lists the service and serves relay.proto', async () => {
  // A reflection client built from the reflection package's own proto.
  const protoLoader = await import('@grpc/proto-loader');
  const path = await import('path');
  const reflectionProto = path.join(path.dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
  const def = protoLoader.loadSync(reflectionProto, { keepCase: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
  };
  const address = (client.getChannel().getTarget() as string).replace(/^dns:/, '');
  const reflection = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure());
  const stream = reflection.ServerReflectionInfo() as grpc.ClientDuplexStream<unknown, Record<string, any>>;
  const responses: Record<string, any>[] = [];
  stream.on('data', (r) => responses.push(r));
  const done = new Promise((resolve) => stream.on('end', resolve));
  stream.write({ list_services: '*' });
  stream.write({ file_containing_symbol: `${RELAY_SERVICE_NAME}` });
  stream.end();
  await done;
  reflection.close();
  const services = responses[0].list_services_response.service.map((s: { name: string }) => s.name);
  expect(services).toContain(RELAY_SERVICE_NAME);
  const files = responses[1].file_descriptor_response.file_descriptor_proto as Buffer[];
  expect(files.length).toBe(1);
  expect(Buffer.from(files[0]).includes(Buffer.from('relay.proto'))).toBe(true);
});
