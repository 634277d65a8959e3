// An etcd client's gRPC calls passed through to a real etcd, with faults a test turns on per method:
// one process's keepalives lost while its watch and reads still work, or a transaction applied by
// etcd whose answer is held back. A TCP proxy (tcp-proxy.ts) can only break the whole connection;
// the etcd3 client multiplexes every call on one, so a fault in one kind of call needs this.
// Messages pass as opaque bytes (nothing is decoded), every service of etcd's rpc.proto is served.
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const ETCD_PROTO_DIR = path.join(path.dirname(require.resolve('etcd3/package.json')), 'proto');

const bytes = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};

interface Method {
  name: string;
  path: string;
  requestStream: boolean;
  responseStream: boolean;
}

function etcdServices(): Map<string, Method[]> {
  const definition = protoLoader.loadSync('rpc.proto', { includeDirs: [ETCD_PROTO_DIR] });
  const services = new Map<string, Method[]>();
  for (const [name, value] of Object.entries(definition)) {
    const methods = Object.entries(value).filter(([, m]) => typeof (m as { path?: unknown }).path === 'string');
    if (methods.length === 0) continue;
    services.set(
      name,
      methods.map(([method, m]) => {
        const d = m as grpc.MethodDefinition<unknown, unknown>;
        return { name: method, path: d.path, requestStream: d.requestStream, responseStream: d.responseStream };
      }),
    );
  }
  return services;
}

type Fault = 'drop-requests' | 'hold-responses';

interface HeldAnswer {
  /** False when the call ended (its deadline passed) before the answer. */
  waiting(): boolean;
  deliver(): void;
}

export class EtcdFaultProxy {
  private readonly server = new grpc.Server();
  private readonly upstream: grpc.Client;
  private readonly faults = new Map<string, Fault>();
  /** Held answers by method, delivered in order on release(). */
  private readonly held = new Map<string, HeldAnswer[]>();
  private readonly calls = new Map<string, number>();
  /** Held answers that release() delivered to a call still waiting for them, by method. */
  private readonly deliveredCounts = new Map<string, number>();
  port = 0;

  constructor(target: string) {
    this.upstream = new grpc.Client(target, grpc.credentials.createInsecure());
  }

  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    for (const methods of etcdServices().values()) {
      const service: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
      const impl: grpc.UntypedServiceImplementation = {};
      for (const m of methods) {
        service[m.name] = { path: m.path, requestStream: m.requestStream, responseStream: m.responseStream, ...bytes };
        impl[m.name] = m.requestStream || m.responseStream ? this.stream(m) : this.unary(m);
      }
      this.server.addService(service, impl);
    }
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
    );
    return this;
  }

  /** Messages the client sends on `method` (e.g. LeaseKeepAlive) are lost until release(method). */
  dropRequests(method: string): void {
    this.faults.set(method, 'drop-requests');
  }

  /** Calls of `method` (e.g. Txn) reach etcd and are applied, but their answers wait for release(method). */
  holdResponses(method: string): void {
    this.faults.set(method, 'hold-responses');
  }

  /** Ends the method's fault; held answers are delivered now, in order. */
  release(method: string): void {
    this.faults.delete(method);
    const held = this.held.get(method) ?? [];
    this.held.delete(method);
    for (const answer of held) {
      if (!answer.waiting()) continue;
      answer.deliver();
      this.deliveredCounts.set(method, this.delivered(method) + 1);
    }
  }

  /** Calls of `method` seen so far. */
  count(method: string): number {
    return this.calls.get(method) ?? 0;
  }

  /** Answers of `method` held for calls still waiting for them. */
  holding(method: string): number {
    return (this.held.get(method) ?? []).filter((a) => a.waiting()).length;
  }

  /** Held answers of `method` that release() handed to a client still waiting for them. */
  delivered(method: string): number {
    return this.deliveredCounts.get(method) ?? 0;
  }

  async close(): Promise<void> {
    this.server.forceShutdown();
    this.upstream.close();
  }

  private seen(method: string): void {
    this.calls.set(method, this.count(method) + 1);
  }

  /** Delivers the answer now, or on release() while the method's answers are held. */
  private answer(method: string, answer: HeldAnswer): void {
    if (this.faults.get(method) !== 'hold-responses') {
      if (answer.waiting()) answer.deliver();
      return;
    }
    const list = this.held.get(method) ?? [];
    list.push(answer);
    this.held.set(method, list);
  }

  private unary(m: Method): grpc.handleUnaryCall<Buffer, Buffer> {
    return (call, callback) => {
      this.seen(m.name);
      if (this.faults.get(m.name) === 'drop-requests') return; // never answered: the client's deadline ends it
      let cancelled = false;
      call.on('cancelled', () => (cancelled = true));
      this.upstream.makeUnaryRequest(m.path, bytes.requestSerialize, bytes.responseDeserialize, call.request, call.metadata, (err, res) => {
        this.answer(m.name, {
          waiting: () => !cancelled,
          deliver: () => (err ? callback(err) : callback(null, res)),
        });
      });
    };
  }

  private stream(m: Method): (call: grpc.ServerDuplexStream<Buffer, Buffer>) => void {
    return (call) => {
      this.seen(m.name);
      const up = m.requestStream
        ? this.upstream.makeBidiStreamRequest(m.path, bytes.requestSerialize, bytes.responseDeserialize, call.metadata)
        : this.upstream.makeServerStreamRequest(m.path, bytes.requestSerialize, bytes.responseDeserialize, (call as unknown as { request: Buffer }).request, call.metadata);
      let ended = false;
      const end = (): void => {
        ended = true;
        up.cancel();
      };
      call.on('cancelled', end);
      call.on('error', end);
      if (m.requestStream) {
        call.on('data', (b: Buffer) => {
          if (this.faults.get(m.name) !== 'drop-requests') (up as grpc.ClientDuplexStream<Buffer, Buffer>).write(b);
        });
        call.on('end', () => (up as grpc.ClientDuplexStream<Buffer, Buffer>).end());
      }
      up.on('data', (b: Buffer) => this.answer(m.name, { waiting: () => !ended, deliver: () => call.write(b) }));
      up.on('error', (err: grpc.ServiceError) => {
        if (!ended && err.code !== grpc.status.CANCELLED) call.emit('error', err);
      });
      up.on('end', () => !ended && call.end());
    };
  }
}
