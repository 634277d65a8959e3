// grpc-js glue for dynamo.kvrelay.v1.KvEventRelay: a ServiceDefinition built from relay.proto and a
// typed client. Serializers accept a Buffer as already-encoded bytes, so the publication layer can
// encode a frame once and hand the same bytes to every subscriber; a plain object is encoded here.
import * as grpc from '@grpc/grpc-js';
import { wireCodec } from './codec';
import { RELAY_SERVICE_NAME } from './constants';
import { relayService } from './proto';
import type {
  FilterUpdate,
  KvPoolCatalogUpdate,
  KvPoolLoadUpdate,
  RelayInfo,
  RelayInfoRequest,
  ServingLoadUpdate,
  ServingReadinessUpdate,
  SubscribeKvPoolLoadRequest,
  SubscribeKvPoolRequest,
  SubscribeServingLoadRequest,
  SubscribeServingReadinessRequest,
  WatchKvPoolCatalogRequest,
  WireMessageName,
} from './types';

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}

function serializer(typeName: WireMessageName): (value: unknown) => Buffer {
  const codec = wireCodec(typeName);
  return (value) => (Buffer.isBuffer(value) ? value : codec.encode(value as never));
}

function deserializer(typeName: WireMessageName): (bytes: Buffer) => unknown {
  const codec = wireCodec(typeName);
  return (bytes) => codec.decode(bytes);
}

function buildServiceDefinition(): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of relayService.methodsArray) {
    method.resolve();
    const requestType = method.resolvedRequestType!.name as WireMessageName;
    const responseType = method.resolvedResponseType!.name as WireMessageName;
    // Keyed like @grpc/proto-loader: PascalCase RPC name, camelCase as originalName; grpc-js accepts
    // handlers and exposes client methods under both.
    definition[method.name] = {
      path: `/${RELAY_SERVICE_NAME}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(requestType),
      requestDeserialize: deserializer(requestType),
      responseSerialize: serializer(responseType),
      responseDeserialize: deserializer(responseType),
      originalName: lowerFirst(method.name),
    };
  }
  return definition;
}

/** KvEventRelay for `server.addService(serviceDefinition, handlers)`. */
export const serviceDefinition: grpc.ServiceDefinition = buildServiceDefinition();

/** A server-stream response item: a message, or its bytes encoded once by the caller. */
export type Encoded<T> = T | Buffer;

/** Handler shapes for `server.addService(serviceDefinition, handlers)`. */
export interface KvEventRelayHandlers extends grpc.UntypedServiceImplementation {
  getRelayInfo: grpc.handleUnaryCall<RelayInfoRequest, Encoded<RelayInfo>>;
  watchKvPoolCatalog: grpc.handleServerStreamingCall<WatchKvPoolCatalogRequest, Encoded<KvPoolCatalogUpdate>>;
  subscribeKvPool: grpc.handleServerStreamingCall<SubscribeKvPoolRequest, Encoded<FilterUpdate>>;
  subscribeServingReadiness: grpc.handleServerStreamingCall<
    SubscribeServingReadinessRequest,
    Encoded<ServingReadinessUpdate>
  >;
  subscribeKvPoolLoad: grpc.handleServerStreamingCall<SubscribeKvPoolLoadRequest, Encoded<KvPoolLoadUpdate>>;
  subscribeServingLoad: grpc.handleServerStreamingCall<SubscribeServingLoadRequest, Encoded<ServingLoadUpdate>>;
}

type StreamCall<Req, Res> = (
  request: Req,
  metadata?: grpc.Metadata,
  options?: Partial<grpc.CallOptions>,
) => grpc.ClientReadableStream<Res>;

/** The client side of KvEventRelay (camelCase method names). */
export interface KvEventRelayClient extends grpc.Client {
  getRelayInfo(request: RelayInfoRequest, callback: grpc.requestCallback<RelayInfo>): grpc.ClientUnaryCall;
  getRelayInfo(
    request: RelayInfoRequest,
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: grpc.requestCallback<RelayInfo>,
  ): grpc.ClientUnaryCall;
  watchKvPoolCatalog: StreamCall<WatchKvPoolCatalogRequest, KvPoolCatalogUpdate>;
  subscribeKvPool: StreamCall<SubscribeKvPoolRequest, FilterUpdate>;
  subscribeServingReadiness: StreamCall<SubscribeServingReadinessRequest, ServingReadinessUpdate>;
  subscribeKvPoolLoad: StreamCall<SubscribeKvPoolLoadRequest, KvPoolLoadUpdate>;
  subscribeServingLoad: StreamCall<SubscribeServingLoadRequest, ServingLoadUpdate>;
}

const ClientConstructor = grpc.makeGenericClientConstructor(serviceDefinition, 'KvEventRelay');

export interface MakeClientOptions {
  /** Default: plaintext, as the contract's (security/client-tls.ts builds TLS credentials). */
  credentials?: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
}

/** A KvEventRelay client for `address` ("host:port"). Close it with `client.close()`. */
export function makeClient(address: string, options: MakeClientOptions = {}): KvEventRelayClient {
  const credentials = options.credentials ?? grpc.credentials.createInsecure();
  return new ClientConstructor(address, credentials, options.channelOptions) as unknown as KvEventRelayClient;
}

/** GetRelayInfo as a promise. */
export function getRelayInfo(
  client: KvEventRelayClient,
  request: RelayInfoRequest,
  options: Partial<grpc.CallOptions> = {},
): Promise<RelayInfo> {
  return new Promise((resolve, reject) => {
    client.getRelayInfo(request, new grpc.Metadata(), options, (err, info) => {
      if (err) reject(err);
      else resolve(info!);
    });
  });
}
