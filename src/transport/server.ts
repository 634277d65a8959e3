// The relay's gRPC server: KvEventRelay plus gRPC health and reflection on one HTTP/2 port,
// plaintext or TLS (connections accepted by our own listener and handed to grpc-js). Shutdown marks health
// NOT_SERVING, ends every stream, and force-closes every connection (idle ones and ones whose
// client stopped reading) after a short grace.
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import {
  SHUTDOWN_GRACE_MS,
  resolveServiceOptions,
  type ServiceOptions,
  type ServiceOptionsInput,
} from '../config/defaults';
import type { TlsConfig } from '../config/schema';
import { MAX_CONCURRENT_STREAMS_PER_CONNECTION, MAX_REQUEST_BYTES } from '../config/limits';
import { silentLogger, type Logger } from '../log';
import { Publication } from '../publication/service';
import type { RelaySource } from '../publication/source';
import type { PublicationStats } from '../publication/stats';
import { RELAY_SERVICE_NAME } from '../wire/constants';
import { listenerSecurity, type TlsStats } from '../security/listener-security';
import { relayReflectionPackageDefinition } from '../wire/proto';
import { serviceDefinition } from '../wire/service';
import type { RelayIdentity } from '../wire/types';
import { relayHandlers } from './handlers';
import { ConnectionAdmission, connectionsPerIp, type ConnectionStats } from './admission';
import { listen, type Listener } from './listener';
import { acceptZstdRequests } from './zstd';

export interface RelayServerConfig {
  source: RelaySource;
  /** Numeric "IP:port"; port 0 picks a free port. */
  bind: string;
  relay: RelayIdentity;
  options?: ServiceOptionsInput;
  /** TLS (and mTLS) on the listener; plaintext when omitted. The files are read now and watched. */
  tls?: TlsConfig;
  /** The transport failed on its own (a load plane stopped): it has shut down; the relay should stop. */
  onFatal?: (err: unknown) => void;
  /** Warnings about the running transport; default silent. */
  logger?: Logger;
}

export interface RelayServer {
  /** "host:port" actually bound. */
  readonly address: string;
  readonly port: number;
  readonly options: ServiceOptions;
  /** True when the listener speaks TLS. */
  readonly secure: boolean;
  /** True from start until shutdown begins (what gRPC health reports). */
  readonly serving: boolean;
  /** TCP connections open now (at most `limits.maxConnections`). */
  readonly connections: number;
  /** Why the transport stopped on its own, if it did. */
  readonly lastError: unknown;
  /** Publication counters for the metrics exporter. */
  stats(): PublicationStats;
  /** Pool streams per generation (producer key) for the status view. */
  poolSubscribers(): Map<string, number>;
  /** TLS state for the metrics exporter; undefined for a plaintext listener. */
  tlsStats(): TlsStats | undefined;
  /** Connection admission counters for the metrics exporter. */
  connectionStats(): ConnectionStats;
  /** Ends every stream and closes every connection; resolves within 5 s. Idempotent. */
  shutdown(): Promise<void>;
}

export async function startRelayServer(config: RelayServerConfig): Promise<RelayServer> {
  const options = resolveServiceOptions(config.options);
  const { queues, wan } = options;
  const logger = config.logger ?? silentLogger;
  // First, so a bad certificate file fails the start before anything is set up.
  const security = listenerSecurity(config.tls, logger);
  const admission = new ConnectionAdmission(
    { maxConnections: options.limits.maxConnections, maxConnectionsPerIp: connectionsPerIp(options.limits), firstCallMs: options.timing.connectionFirstCallMs },
    logger,
  );
  if (!acceptZstdRequests()) {
    logger.warn({}, 'grpc-js internals changed: zstd-compressed requests are refused (UNIMPLEMENTED); other requests are served');
  }
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    'grpc.max_send_message_length': queues.maxMessageBytes,
    'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS_PER_CONNECTION,
    'grpc.max_connection_idle_ms': options.timing.connectionIdleMs,
    'grpc.keepalive_time_ms': wan.keepaliveIntervalMs,
    'grpc.keepalive_timeout_ms': wan.keepaliveTimeoutMs,
    // The allow-list first: a call it refuses does not make its connection established.
    interceptors: [...security.interceptors, admission.interceptor],
  });
  let lastError: unknown;
  const fatal = (err: unknown): void => {
    if (lastError !== undefined) return;
    lastError = err ?? new Error('transport failed');
    void shutdown().then(() => config.onFatal?.(lastError));
  };
  const publication = new Publication({ source: config.source, relay: config.relay, options, onFailure: fatal });
  server.addService(serviceDefinition, relayHandlers(publication, config.relay));
  const health = new HealthImplementation({ '': 'SERVING', [RELAY_SERVICE_NAME]: 'SERVING' });
  health.addToServer(server);
  new ReflectionService(relayReflectionPackageDefinition as never).addToServer(server);

  const injector = server.createConnectionInjector(security.credentials);
  let listener: Listener;
  try {
    listener = await listen(config.bind, (socket) => injector.injectConnection(socket), { admit: (socket) => admission.admit(socket) });
  } catch (err) {
    publication.close();
    server.forceShutdown();
    security.close();
    throw err;
  }

  let serving = true;
  let stopped: Promise<void> | undefined;
  function shutdown(): Promise<void> {
    stopped ??= (async () => {
      serving = false;
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(RELAY_SERVICE_NAME, 'NOT_SERVING');
      publication.close();
      // Streams have ended: clients that read get their EOF during the grace; then every
      // remaining connection (idle, or with unread data) is torn down.
      injector.drain(SHUTDOWN_GRACE_MS);
      await listener.close(SHUTDOWN_GRACE_MS);
      server.forceShutdown();
      security.close();
    })();
    return stopped;
  }

  return {
    address: listener.address,
    port: listener.port,
    options,
    secure: config.tls !== undefined,
    get serving() {
      return serving;
    },
    get connections() {
      return listener.connections;
    },
    get lastError() {
      return lastError;
    },
    stats: () => publication.stats(),
    poolSubscribers: () => publication.poolSubscribers(),
    tlsStats: () => security.stats(),
    connectionStats: () => admission.stats(),
    shutdown,
  };
}
