// gRPC reflection v1 and health on the relay's listener (wire-contract.md §1.2).
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as path from 'path';
import * as protobuf from 'protobufjs';
import * as descriptor from 'protobufjs/ext/descriptor';
import { service as healthService } from 'grpc-health-check';
import { RELAY_SERVICE_NAME } from '../../src/wire/constants';
import { startTestRelay, type TestRelay } from './helpers';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => relay.close());

function reflectionClient(address: string): grpc.Client & { ServerReflectionInfo(): grpc.ClientDuplexStream<object, Record<string, unknown>> } {
  const file = path.join(path.dirname(require.resolve('@grpc/reflection')), '..', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
  const definition = protoLoader.loadSync(file, { keepCase: false, longs: String, bytes: Buffer, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
  };
  return new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure()) as never;
}

function ask(client: ReturnType<typeof reflectionClient>, request: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (m) => {
      resolve(m);
      call.end();
    });
    call.on('error', reject);
    call.write(request);
  });
}

test('reflection lists the relay service and serves relay.proto for its symbols', async () => {
  const client = reflectionClient(relay.server.address);
  const list = (await ask(client, { listServices: '' })) as { listServicesResponse: { service: { name: string }[] } };
  expect(list.listServicesResponse.service.map((s) => s.name)).toContain(RELAY_SERVICE_NAME);
  const file = (await ask(client, { fileContainingSymbol: 'dynamo.kvrelay.v1.FilterUpdate' })) as {
    fileDescriptorResponse: { fileDescriptorProto: Buffer[] };
  };
  const FileDescriptorProto = (descriptor as unknown as { FileDescriptorProto: protobuf.Type }).FileDescriptorProto;
  const proto = FileDescriptorProto.toObject(FileDescriptorProto.decode(file.fileDescriptorResponse.fileDescriptorProto[0])) as {
    package: string;
    service: { name: string; method: { name: string }[] }[];
  };
  expect(proto.package).toBe('dynamo.kvrelay.v1');
  expect(proto.service[0].method.map((m) => m.name)).toEqual([
    'GetRelayInfo',
    'WatchKvPoolCatalog',
    'SubscribeKvPool',
    'SubscribeServingReadiness',
    'SubscribeKvPoolLoad',
    'SubscribeServingLoad',
  ]);
  client.close();
});

test('health reports SERVING for the relay service name and the overall server', async () => {
  const Client = grpc.makeGenericClientConstructor(healthService, 'Health');
  const client = new Client(relay.server.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check(req: { service: string }, cb: (e: grpc.ServiceError | null, r?: { status: string }) => void): void;
  };
  const check = (service: string) =>
    new Promise<string>((resolve, reject) => client.check({ service }, (e, r) => (e ? reject(e) : resolve(r!.status))));
  expect(await check(RELAY_SERVICE_NAME)).toBe('SERVING');
  expect(await check('')).toBe('SERVING');
  await expect(check('unknown.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  client.close();
});
