// Test helpers: a relay on loopback port 0 driven by a TestSource, a real grpc-js client, and a
// reader that turns a client stream into awaitable messages and a final status.
import * as grpc from '@grpc/grpc-js';
import type { ServiceOptionsInput } from '../../src/config/defaults';
import { startRelayServer, type RelayServer } from '../../src/transport/server';
import { ERROR_REASON_TRAILER, RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import { relayErrorReason } from '../../src/wire/errors';
import { makeClient, serviceDefinition, type KvEventRelayClient } from '../../src/wire/service';
import type { RelayIdentity } from '../../src/wire/types';
import { TestSource } from '../support/test-source';

export const MARKER = RELAY_CONTRACT_MARKER;
export const RELAY: RelayIdentity = { drtInstanceId: 0x0102_0304_0506_0708n, relayIncarnation: 0x7fff_0000_1111_2222n };
export const MAX_MESSAGE = 8 * 1024 * 1024;

export interface TestRelay {
  source: TestSource;
  server: RelayServer;
  client: KvEventRelayClient;
  newClient(): KvEventRelayClient;
  close(): Promise<void>;
}

export async function startTestRelay(options: ServiceOptionsInput = {}, source = new TestSource()): Promise<TestRelay> {
  const server = await startRelayServer({ source, bind: '127.0.0.1:0', relay: RELAY, options });
  const clients: KvEventRelayClient[] = [];
  const newClient = (): KvEventRelayClient => {
    const c = makeClient(server.address, {
      channelOptions: { 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.use_local_subchannel_pool': 1 },
    });
    clients.push(c);
    return c;
  };
  const client = newClient();
  return {
    source,
    server,
    client,
    newClient,
    async close() {
      for (const c of clients) c.close();
      await server.shutdown();
    },
  };
}

export interface EndStatus {
  code: number;
  details: string;
  reason: number | undefined;
}

/**
 * Buffers a server stream's messages and its final status. With `retain: false` it only counts
 * them (next/take never see one), for a reader that handles messages itself and would otherwise
 * keep every snapshot and delta alive.
 */
export class StreamReader<T> {
  private readonly messages: T[] = [];
  private waiters: Array<() => void> = [];
  private status: EndStatus | undefined;
  received = 0;

  constructor(
    readonly call: grpc.ClientReadableStream<T>,
    private readonly options: { retain: boolean } = { retain: true },
  ) {
    call.on('data', (m: T) => {
      this.received += 1;
      if (this.options.retain) this.messages.push(m);
      this.wake();
    });
    call.on('error', (err: grpc.ServiceError) => {
      this.status = { code: err.code, details: err.details, reason: relayErrorReason(err) };
      this.wake();
    });
    call.on('status', (s: grpc.StatusObject) => {
      if (s.code === 0) {
        this.status = { code: 0, details: s.details, reason: undefined };
        this.wake();
      }
    });
  }

  /** The next message; fails if the stream ends first or nothing arrives within `timeoutMs`. */
  async next(timeoutMs = 5000): Promise<T> {
    await this.until(() => this.messages.length > 0 || this.status !== undefined, timeoutMs);
    const m = this.messages.shift();
    if (m === undefined) throw new Error(`stream ended instead: ${JSON.stringify(this.status)}`);
    return m;
  }

  async take(n: number, timeoutMs = 5000): Promise<T[]> {
    const out: T[] = [];
    for (let i = 0; i < n; i += 1) out.push(await this.next(timeoutMs));
    return out;
  }

  /** The final status, after skipping any messages still queued. */
  async end(timeoutMs = 5000): Promise<EndStatus> {
    await this.until(() => this.status !== undefined, timeoutMs);
    return this.status!;
  }

  /** Waits for the first message or the end: true when the stream delivered something. */
  async opened(timeoutMs = 5000): Promise<boolean> {
    await this.until(() => this.received > 0 || this.status !== undefined, timeoutMs);
    return this.received > 0;
  }

  get ended(): EndStatus | undefined {
    return this.status;
  }

  get buffered(): number {
    return this.messages.length;
  }

  cancel(): void {
    this.call.cancel();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private until(condition: () => boolean, timeoutMs: number): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const check = (): void => {
        if (condition()) {
          clearTimeout(timer);
          resolve();
        } else this.waiters.push(check);
      };
      this.waiters.push(check);
    });
  }
}

export function subscriber(id = 'consumer-a'): { subscriberId: string; contractMarker: number } {
  return { subscriberId: id, contractMarker: MARKER };
}

/** A KvEventRelay client whose stream messages are the raw response bytes as received. */
export function rawBytesClient(address: string): KvEventRelayClient {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(serviceDefinition)) {
    definition[name] = { ...method, responseDeserialize: (bytes: Buffer) => bytes };
  }
  const Client = grpc.makeGenericClientConstructor(definition, 'KvEventRelayRaw');
  return new Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX_MESSAGE,
  }) as unknown as KvEventRelayClient;
}

export interface BytesClient extends grpc.Client {
  unary(method: string, request: Buffer, callback: grpc.requestCallback<Buffer>): grpc.ClientUnaryCall;
  stream(method: string, request: Buffer): grpc.ClientReadableStream<Buffer>;
}

/** A KvEventRelay client that sends and receives raw message bytes (identity serializers), for hostile requests. */
export function bytesClient(address: string): BytesClient {
  const identity = (bytes: Buffer): Buffer => bytes;
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, method] of Object.entries(serviceDefinition)) {
    definition[name] = { ...method, requestSerialize: identity, responseDeserialize: identity } as grpc.MethodDefinition<Buffer, Buffer>;
  }
  const Client = grpc.makeGenericClientConstructor(definition, 'KvEventRelayBytes');
  const client = new Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX_MESSAGE,
    'grpc.use_local_subchannel_pool': 1,
  }) as unknown as Record<string, (...args: unknown[]) => unknown> & grpc.Client;
  return Object.assign(client, {
    unary: (method: string, request: Buffer, callback: grpc.requestCallback<Buffer>) =>
      client[method](request, callback) as grpc.ClientUnaryCall,
    stream: (method: string, request: Buffer) => client[method](request) as grpc.ClientReadableStream<Buffer>,
  });
}

/** The final status of a call made with a BytesClient (messages are counted, not kept). */
export function bytesCallEnd(client: BytesClient, method: string, request: Buffer): Promise<{ code: number; details: string; reason: string | undefined; messages: number }> {
  return new Promise((resolve) => {
    const done = (err: grpc.ServiceError | null, messages: number): void =>
      resolve({
        code: err ? err.code : grpc.status.OK,
        details: err?.details ?? '',
        reason: err?.metadata?.get(ERROR_REASON_TRAILER)[0] as string | undefined,
        messages,
      });
    if (method === 'GetRelayInfo') {
      client.unary(method, request, (err, value) => done(err, value ? 1 : 0));
      return;
    }
    let messages = 0;
    const call = client.stream(method, request);
    call.on('data', () => {
      messages += 1;
      // A stream that opened is what a valid request gets: stop it here.
      call.cancel();
    });
    call.on('error', (err: grpc.ServiceError) => done(err.code === grpc.status.CANCELLED && messages > 0 ? null : err, messages));
    call.on('end', () => done(null, messages));
  });
}
