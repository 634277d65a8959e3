// startRelay: a whole relay in this process — config, producer, gRPC listener, metrics, etcd
// discovery and the config watch — as `kv-dc-relay serve` runs it and as tests and embedders start it.
import * as fs from 'fs';
import * as os from 'os';
import { monotonicMs } from '../clock';
import { DIAGNOSTICS_INTERVAL_MS, RESERVATION_WARN_MEMORY_SHARE } from '../config/defaults';
import { ConfigError } from '../config/errors';
import { parseConfigText, type ConfigOverrides } from '../config/load';
import type { RelayConfig } from '../config/schema';
import { watchConfigFile, type ConfigWatcher } from '../config/watch';
import { Diagnostics } from '../diagnostics/diagnostics';
import { RelaySampler } from '../diagnostics/sample';
import { EtcdDeployment } from '../discovery/etcd-deployment';
import { DynamoDiscovery } from '../dynamo/discovery/watch';
import { DynamoEventPlane, type EventPlane } from '../dynamo/event-plane/plane';
import { ThreadedEventPlane } from '../dynamo/event-plane/threaded';
import type { IngestSink } from '../ingest/types';
import { dynamoMetrics } from '../dynamo/metrics';
import { newRelayIdentity } from '../identity';
import type { Logger } from '../log';
import { EventLoopDelayMonitor } from '../metrics/event-loop';
import { createRelayMetrics, DeltaLatencyMetrics } from '../metrics/registry';
import { startMetricsServer, type MetricsServer } from '../metrics/server';
import { addonOrigins } from '../native';
import { Producer } from '../producer/producer';
import { reservationMemory } from '../producer/views';
import { listenError } from './listen-error';
import { CertificateFileError, readCertificateFiles } from '../security/certificate-files';
import { startRelayServer, type RelayServer } from '../transport/server';
import type { RelayIdentity } from '../wire/types';

export interface RelayProcessOptions {
  configFile: string;
  overrides?: ConfigOverrides;
  logger: Logger;
}

export interface RunningRelay {
  readonly address: string;
  readonly metricsAddress: string | undefined;
  readonly relay: RelayIdentity;
  readonly producer: Producer;
  readonly server: RelayServer;
  /** With `discovery.etcd`: the deployment source and this relay's shard. */
  readonly discovery: EtcdDeployment | undefined;
  /** With `discovery.dynamo`: the Dynamo deployment's discovery (its event plane feeds the producer). */
  readonly dynamoDiscovery: DynamoDiscovery | undefined;
  /**
   * Resolves with the error if the transport fails on its own (a load plane stopped). The transport
   * has then shut itself down; call shutdown() to stop the rest. Never resolves otherwise.
   */
  readonly failed: Promise<unknown>;
  /** Idempotent; resolves once streams ended, connections closed and sources stopped. */
  shutdown(): Promise<void>;
}

/** Loads the config (ConfigError on a bad file), starts producer, gRPC listener, metrics and the watch. */
export async function startRelay(options: RelayProcessOptions): Promise<RunningRelay> {
  const { configFile, overrides = {}, logger } = options;
  const text = readConfig(configFile);
  const config = parseConfigText(text, configFile, overrides);
  checkCertificateFiles(configFile, config);
  logger.info({ addons: addonOrigins() }, 'native addons loaded');
  const relay = newRelayIdentity();
  const startedAt = monotonicMs();
  const deltaLatency = config.metricsBind ? new DeltaLatencyMetrics() : undefined;
  // Rounds start once ingest has; until then nothing samples the producer or the server.
  let producer: Producer;
  let server: RelayServer;
  let sampler: RelaySampler | undefined;
  const diagnostics = new Diagnostics({
    sample: (latency, now) => (sampler ??= new RelaySampler({ producer, poolSubscribers: () => server.poolSubscribers() })).sample(latency, now),
    relayInfo: () => ({
      dcId: config.dcId,
      relayIncarnation: relay.relayIncarnation.toString(),
      address: server.address,
      uptimeSeconds: Math.round(monotonicMs() - startedAt) / 1000,
    }),
    logger,
  });
  // A Dynamo deployment: KV events from its event plane, the deployment from its own etcd layout.
  const dynamo = config.discovery?.dynamo;
  let eventPlane: EventPlane | undefined;
  // On a thread of its own (the NATS client, decoding and order off the event loop) unless the
  // config runs ingest on the main thread (limits.ingestThreads 0).
  const newPlane = (sink: IngestSink): EventPlane => {
    const options = { natsServers: dynamo?.nats?.servers, sink };
    return config.limits.ingestThreads > 0
      ? new ThreadedEventPlane({ ...options, logger })
      : new DynamoEventPlane({ ...options, logger: logger.child({ component: 'dynamo-events' }) });
  };
  // Pools are built now, but no engine is dialled (nor the event plane's discovery started) until
  // both listeners are bound: a port in use ends the start (one line, exit 1) before anything
  // outside this process was contacted.
  producer = new Producer({
    config,
    relay,
    logger,
    holdIngest: true,
    onDeltaPublished: (t, pool) => {
      deltaLatency?.observe(t);
      diagnostics.deltaPublished(pool, t.handoffMs + t.poolMs);
    },
    ...(dynamo ? { eventPlane: (sink: IngestSink) => (eventPlane = newPlane(sink)) } : {}),
  });
  await producer.start();

  let fail!: (err: unknown) => void;
  const failed = new Promise<unknown>((resolve) => (fail = resolve));
  try {
    server = await startRelayServer({
      source: producer,
      bind: config.bind,
      tls: config.tls,
      relay,
      options: { limits: config.limits, timing: config.timing, queues: config.queues },
      logger,
      onFatal: (err) => {
        logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'transport failed');
        fail(err);
      },
    });
  } catch (err) {
    await producer.close();
    throw listenError('gRPC', config.bind, err);
  }

  // With etcd discovery the deployment (and this shard's share of it) comes from etcd, not the file.
  const etcd = config.discovery?.etcd;
  const discovery = etcd
    ? new EtcdDeployment({
        etcd,
        dcId: config.dcId,
        producer,
        shardId: relay.relayIncarnation.toString(16).padStart(16, '0'),
        shardInfo: { address: etcd.advertise ?? server.address, dcId: config.dcId, relayIncarnation: relay.relayIncarnation.toString() },
        logger,
      })
    : undefined;
  const dynamoDiscovery = dynamo && eventPlane ? new DynamoDiscovery({ config: dynamo, dcId: config.dcId, producer, eventPlane, logger }) : undefined;

  let shuttingDown = false;
  let metrics: MetricsServer | undefined;
  let eventLoop: EventLoopDelayMonitor | undefined;
  if (config.metricsBind) {
    const loop = (eventLoop = new EventLoopDelayMonitor());
    const registry = createRelayMetrics({
      producer: () => producer.metrics(),
      transport: () => server.stats(),
      connections: () => server.connectionStats(),
      eventLoop: () => loop.take(),
      deltaLatency,
      ...(server.secure ? { tls: () => server.tlsStats()! } : {}),
      ...(discovery ? { discovery: () => discovery.metrics() } : {}),
      ...(dynamoDiscovery && eventPlane ? { dynamo: dynamoMetrics(dynamoDiscovery, eventPlane) } : {}),
      diagnostics: () => diagnostics.metrics(),
    });
    try {
      metrics = await startMetricsServer(config.metricsBind, registry, () => server.serving && !shuttingDown, () => diagnostics.status());
    } catch (err) {
      loop.close();
      await Promise.all([server.shutdown(), producer.close(), discovery?.close(), dynamoDiscovery?.close()]);
      throw listenError('metrics', config.metricsBind, err);
    }
  }
  logger.info({ address: server.address, relayIncarnation: relay.relayIncarnation.toString(), dcId: config.dcId }, 'listening');
  if (metrics) {
    logger.info({ address: metrics.address }, 'metrics listening');
    if (!metrics.loopback) {
      logger.warn({ address: metrics.address }, 'metrics listener is reachable from other hosts: /metrics and /healthz are plaintext HTTP without authentication');
    }
  }
  logReservation(logger, config);
  discovery?.start();
  void dynamoDiscovery?.start();
  await producer.startIngest();
  logger.info({}, 'ingest started');
  diagnostics.start(DIAGNOSTICS_INTERVAL_MS);

  const watcher: ConfigWatcher = watchConfigFile(configFile, text, {
    overrides,
    onChange: (next) => {
      const ignored = startOnlyChanges(config, next);
      if (ignored.length > 0) logger.warn({ fields: ignored }, 'config fields changed that apply only at start; restart to apply them');
      if (discovery || dynamoDiscovery) return;
      logger.info({ file: configFile }, 'config changed; applying endpoints');
      producer.applyConfig(next).catch((err: Error) => logger.error({ err: err.message }, 'applying the config failed'));
    },
    onError: (err) => logger.error({ file: err.file, field: err.field, problem: err.problem }, `${err.message}; keeping the running config`),
  });

  let stopped: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopped ??= (async () => {
      shuttingDown = true;
      watcher.close();
      diagnostics.close();
      logger.info({}, 'shutting down');
      await server.shutdown();
      // The lease is revoked once nothing is served here, so sibling shards take over without overlap.
      await discovery?.close();
      await dynamoDiscovery?.close();
      await producer.close();
      await metrics?.close();
      eventLoop?.close();
      logger.info({}, 'stopped');
    })();
    return stopped;
  };

  return { address: server.address, metricsAddress: metrics?.address, relay, producer, server, discovery, dynamoDiscovery, failed, shutdown };
}

/** The certificate files are part of the config: a problem is reported like any other (exit 2). */
function checkCertificateFiles(configFile: string, config: RelayConfig): void {
  if (!config.tls) return;
  try {
    readCertificateFiles(config.tls);
  } catch (err) {
    if (err instanceof CertificateFileError) throw new ConfigError(configFile, `tls.${err.field}`, `${err.file}: ${err.problem}`);
    throw err;
  }
}

function readConfig(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, '(file)', `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** Top-level fields other than `endpoints` whose change a running relay does not apply. */
function startOnlyChanges(running: RelayConfig, next: RelayConfig): string[] {
  const keys = new Set([...Object.keys(running), ...Object.keys(next)]);
  keys.delete('endpoints');
  const text = (v: unknown): string => JSON.stringify(v) ?? '';
  return [...keys].filter((k) => text(running[k as keyof RelayConfig]) !== text(next[k as keyof RelayConfig])).sort();
}

/** limits.reservePoolBlocks: what the pools' tables take from the start, and a warning when that is most of the host's memory. */
function logReservation(logger: Logger, config: RelayConfig): void {
  const blocks = config.limits.reservePoolBlocks;
  if (blocks === 0) return;
  const m = reservationMemory(blocks, config.endpoints.length, os.totalmem());
  const fields = { reservePoolBlocks: blocks, bytesPerPool: m.perPoolBytes, pools: m.pools, totalBytes: m.totalBytes, hostBytes: m.hostBytes };
  if (m.exceeds) {
    logger.warn(
      { ...fields, action: 'lower limits.reservePoolBlocks to the pools\' working set, or set it to 0 to let the tables grow' },
      `pool table reservations take more than ${RESERVATION_WARN_MEMORY_SHARE * 100} % of this host's memory`,
    );
  } else logger.info(fields, 'pool tables reserved at creation');
}
