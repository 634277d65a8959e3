// The config file schema (spec relay-config.md). Strict everywhere: an unknown field is an error.
import * as net from 'net';
import { z } from 'zod';
import {
  DEFAULT_BIND,
  DEFAULT_METRICS_HOST,
  DEFAULT_ETCD_LEASE_TTL_S,
  DEFAULT_LONE_SHARD_KEEPS_SERVING,
  DEFAULT_EXPECTED_UNIQUE_BLOCKS,
  DEFAULT_LIMITS,
  DEFAULT_QUEUES,
  DEFAULT_TIMING,
  DEFAULT_TLS_REQUIRE_CLIENT_CERT,
} from './defaults';
import {
  IDENTITY_KEY_MAX_BYTES,
  IDENTITY_MAP_MAX_ENTRIES,
  IDENTITY_VALUE_MAX_BYTES,
  MAX_DP_SIZE,
  MAX_ETCD_LEASE_TTL_S,
  MIN_ETCD_LEASE_TTL_S,
  MAX_EXPECTED_UNIQUE_BLOCKS,
  MAX_RESERVE_POOL_BLOCKS,
  MAX_INGEST_THREADS,
  MAX_U32,
  MAX_TIMER_DURATION_MS,
  MAX_TRACKED_BLOCKS_PER_POOL,
  MAX_U64,
  MIN_MAX_MESSAGE_BYTES,
  MIN_PUBLICATION_QUEUE_BYTES,
} from './limits';
import { canonicalPeerAddress } from '../ingest/peer-address';
import { parseSubjectPattern } from '../security/subjects';

const utf8Length = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Non-empty and no surrounding whitespace: the rule for every name the relay publishes or keys on. */
export const name = z
  .string()
  .min(1, 'must not be empty')
  .refine((s) => s.trim() === s, 'must not have surrounding whitespace');

/** Numeric `IP:port` (`127.0.0.1:5561`, `[::1]:5561`, `0.0.0.0:0`). */
export const socketAddress = z.string().refine((s) => parseSocketAddress(s) !== undefined, 'must be a numeric IP:port');

/**
 * `metricsBind`: `IP:port`, or a port alone (a number or a decimal string), which binds loopback;
 * normalized to `IP:port`.
 */
const metricsAddress = z.union([z.number(), z.string()]).transform((bind, ctx) => {
  const port = typeof bind === 'number' ? bind : /^\d{1,5}$/.test(bind) ? Number(bind) : undefined;
  if (port !== undefined && Number.isInteger(port) && port >= 0 && port <= 65_535) return `${DEFAULT_METRICS_HOST}:${port}`;
  if (typeof bind === 'string' && port === undefined && parseSocketAddress(bind) !== undefined) return bind;
  ctx.addIssue({ code: 'custom', message: 'must be a port (0..65535) or a numeric IP:port' });
  return z.NEVER;
});

export function parseSocketAddress(s: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(s);
  if (!m) return undefined;
  const host = m[1] ?? m[2];
  const port = Number(m[3]);
  const family = net.isIP(host);
  if (family === 0 || port > 65535 || (m[1] !== undefined && family !== 6) || (m[2] !== undefined && family !== 4)) {
    return undefined;
  }
  return { host, port };
}

// Limits are bounded by MAX_PERMITS (2^61) in the reference; a config number is exact only to 2^53.
const count = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
const timerMs = count(1, MAX_TIMER_DURATION_MS);
const u32 = count(0, MAX_U32);

/** u64 ids: a JSON/YAML integer (exact only up to 2^53) or a decimal string for larger values. */
const u64 = z
  .union([
    z
      .number()
      .min(0, 'must not be negative')
      .max(Number.MAX_SAFE_INTEGER, 'is above 2^53: write it as a quoted decimal string')
      .refine(Number.isInteger, 'must be an integer'),
    z.string().regex(/^\d{1,20}$/, 'must be a decimal u64'),
  ])
  .transform((v) => BigInt(v))
  .refine((v) => v <= MAX_U64, 'must fit in 64 bits');

const identityMap = z
  .record(
    z.string().refine((k) => utf8Length(k) >= 1 && utf8Length(k) <= IDENTITY_KEY_MAX_BYTES, `keys must be 1..${IDENTITY_KEY_MAX_BYTES} UTF-8 bytes`),
    z.string().refine((v) => utf8Length(v) >= 1 && utf8Length(v) <= IDENTITY_VALUE_MAX_BYTES, `values must be 1..${IDENTITY_VALUE_MAX_BYTES} UTF-8 bytes`),
  )
  .refine((m) => Object.keys(m).length >= 1 && Object.keys(m).length <= IDENTITY_MAP_MAX_ENTRIES, `must have 1..${IDENTITY_MAP_MAX_ENTRIES} entries`);

export const WORKER_TYPES = ['prefill', 'decode', 'encode', 'aggregated'] as const;
const workerType = z.enum(WORKER_TYPES);
/** Readiness dependencies in DNF: alternatives (OR) of worker types that must all (AND) be live. */
const needs = z.array(z.array(workerType).min(1, 'a needs alternative must not be empty'));

/** One worker of an endpoint: a config file `workers` entry, or a worker value registered in etcd. */
export const workerSchema = z.strictObject({
  id: u64,
  dpSize: count(1, MAX_DP_SIZE).default(1),
  dpStartRank: u32.default(0),
  totalKvBlocks: count(0, Number.MAX_SAFE_INTEGER).optional(),
  maxNumSeqs: count(0, Number.MAX_SAFE_INTEGER).optional(),
  live: z.boolean().default(true),
  /**
   * This worker's own worker type and needs, for an endpoint whose workers differ (a Dynamo endpoint
   * with prefill and decode cards); without them the worker takes the endpoint's.
   */
  workerType: workerType.optional(),
  needs: needs.optional(),
  health: z.strictObject({ url: z.url({ protocol: /^https?$/ }) }).optional(),
  kvEvents: z
    .strictObject({
      endpoint: z.string().regex(/^(tcp|ipc|inproc):\/\/.+/, 'must be a ZMQ endpoint (tcp://HOST:PORT)'),
      replayEndpoint: z.string().regex(/^(tcp|ipc|inproc):\/\/.+/, 'must be a ZMQ endpoint (tcp://HOST:PORT)').optional(),
      topic: z.string().default(''),
      mode: z.enum(['connect', 'bind']).default('connect'),
      /** bind mode: the peer IP addresses allowed to publish (canonicalized: ingest/peer-address.ts). */
      allowedPeers: z
        .array(z.string().refine((a) => net.isIP(a) !== 0, 'must be an IP address').transform(canonicalPeerAddress))
        .min(1, 'must list at least one address')
        .optional(),
      /**
       * bind mode without allowedPeers: anyone who reaches the port may publish. Must be said: such a
       * peer can make the relay hold an unfinished multipart message of any size (libzmq bounds
       * frames, not messages; issue 26 item 1).
       */
      allowAnyPeer: z.boolean().optional(),
    })
    .superRefine((k, ctx) => {
      if (k.allowedPeers !== undefined && k.mode !== 'bind') ctx.addIssue({ code: 'custom', path: ['allowedPeers'], message: 'allowedPeers applies to mode bind' });
      if (k.allowAnyPeer !== undefined && k.mode !== 'bind') ctx.addIssue({ code: 'custom', path: ['allowAnyPeer'], message: 'allowAnyPeer applies to mode bind' });
      if (k.mode !== 'bind') return;
      if (k.allowedPeers !== undefined && k.allowAnyPeer === true) {
        ctx.addIssue({ code: 'custom', path: ['allowAnyPeer'], message: 'allowAnyPeer: true contradicts allowedPeers; keep one' });
      } else if (k.allowedPeers === undefined && k.allowAnyPeer !== true) {
        ctx.addIssue({
          code: 'custom',
          path: ['allowedPeers'],
          message:
            'mode bind needs allowedPeers (the engine IP addresses allowed to publish), or allowAnyPeer: true to accept anyone who reaches the port (whose unfinished multipart messages are not bounded in bytes)',
        });
      }
    })
    .optional(),
  metrics: z.strictObject({ url: z.url({ protocol: /^https?$/ }), format: z.enum(['vllm']).default('vllm') }).optional(),
});

/** One serving endpoint: a config file `endpoints` entry, or an endpoint value in etcd. */
export const endpointSchema = z
  .strictObject({
    namespace: name,
    component: name,
    endpoint: name,
    model: z.strictObject({
      name,
      sourcePath: name.optional(),
      kvBlockSize: u32,
      hashFormat: z.enum(['standard', 'eagle']).default('standard'),
      aliases: z.array(name).default([]),
    }),
    indexerIdentity: z.strictObject({ semantics: identityMap.optional(), routingScope: identityMap.optional() }).optional(),
    workerType: workerType.optional(),
    needs: needs.optional(),
    // An adapter without `workers` is served by every worker of the endpoint.
    adapters: z.array(z.strictObject({ name, servedModel: name, workers: z.array(u64).optional() })).default([]),
    workers: z.array(workerSchema).default([]),
  })
  .superRefine((ep, ctx) => {
    const ids = new Set<bigint>();
    ep.workers.forEach((w, i) => {
      if (ids.has(w.id)) ctx.addIssue({ code: 'custom', path: ['workers', i, 'id'], message: `duplicate worker id ${w.id}` });
      ids.add(w.id);
      if (w.needs !== undefined && w.workerType === undefined) {
        ctx.addIssue({ code: 'custom', path: ['workers', i, 'needs'], message: "a worker's needs go with its own workerType" });
      }
      if (w.dpStartRank + w.dpSize - 1 > MAX_U32) {
        ctx.addIssue({ code: 'custom', path: ['workers', i, 'dpSize'], message: 'rank range overflows u32' });
      }
    });
    ep.adapters.forEach((a, i) =>
      a.workers?.forEach((id, j) => {
        if (!ids.has(id)) ctx.addIssue({ code: 'custom', path: ['adapters', i, 'workers', j], message: `unknown worker id ${id}` });
      }),
    );
  });

/** `host:port` or `http(s)://host:port` of an etcd member (names allowed: members are often DNS names). */
const etcdEndpoint = z.string().regex(/^(https?:\/\/)?[^\s/:]+(:\d{1,5})$|^(https?:\/\/)?\[[0-9a-fA-F:.]+\]:\d{1,5}$/, 'must be host:port or http(s)://host:port');

const etcdDiscoverySchema = z.strictObject({
  endpoints: z.array(etcdEndpoint).min(1, 'must list at least one etcd member'),
  /** Key prefix of this datacenter's deployment; relays with the same prefix and dcId are shards of one relay. */
  prefix: name.refine((p) => !p.startsWith('/') || p.length > 1, 'must not be just "/"'),
  tls: z.strictObject({ caFile: name, certFile: name.optional(), keyFile: name.optional() })
    .refine((t) => (t.certFile === undefined) === (t.keyFile === undefined), 'certFile and keyFile go together')
    .optional(),
  auth: z.strictObject({ username: name, password: z.string().min(1, 'must not be empty') }).optional(),
  /** TTL of this shard's lease: a dead shard's pools move within it. */
  leaseTtlSeconds: count(MIN_ETCD_LEASE_TTL_S, MAX_ETCD_LEASE_TTL_S).default(DEFAULT_ETCD_LEASE_TTL_S),
  /** Address consumers reach this shard at (default: the bound gRPC address). */
  advertise: socketAddress.optional(),
  /**
   * A shard that cannot confirm its lease while its mirror shows no other live shard keeps serving
   * (stale) instead of stopping: for a DC that runs one relay and would rather serve through an etcd
   * outage. A shard started while this one is cut off then serves the same pools until it reconnects.
   */
  loneShardKeepsServing: z.boolean().default(DEFAULT_LONE_SHARD_KEEPS_SERVING),
});

/** `nats://host:port` (or host:port) of a NATS server. */
const natsServer = z.string().regex(/^((nats|tls):\/\/)?[^\s/:]+:\d{1,5}$|^((nats|tls):\/\/)?\[[0-9a-fA-F:.]+\]:\d{1,5}$/, 'must be nats://host:port');

/**
 * A Dynamo deployment read from its own discovery and event plane (docs/incoming/dynamo-plane.md):
 * cards, instances and event channels from etcd (`v1/...`), KV events from NATS (core subjects and
 * JetStream streams) and the ZMQ event plane. No per-engine config.
 */
const dynamoDiscoverySchema = z.strictObject({
  etcd: z.strictObject({
    endpoints: z.array(etcdEndpoint).min(1, 'must list at least one etcd member'),
    tls: z.strictObject({ caFile: name, certFile: name.optional(), keyFile: name.optional() })
      .refine((t) => (t.certFile === undefined) === (t.keyFile === undefined), 'certFile and keyFile go together')
      .optional(),
    auth: z.strictObject({ username: name, password: z.string().min(1, 'must not be empty') }).optional(),
  }),
  /** The deployment's NATS (its event plane on NATS and its JetStream streams); omitted = ZMQ event plane only. */
  nats: z.strictObject({ servers: z.array(natsServer).min(1, 'must list at least one NATS server') }).optional(),
  /** Dynamo namespaces to serve; omitted = every namespace found (Dynamo's watch-all). */
  namespaces: z
    .array(name)
    .min(1, 'must list at least one namespace (omit it to serve every namespace)')
    .refine((ns) => new Set(ns).size === ns.length, 'must not repeat a namespace')
    .optional(),
});

/** An allow-list entry: a bare common name or a full `ATTR=value, ...` subject. */
const subjectEntry = z.string().superRefine((entry, ctx) => {
  try {
    parseSubjectPattern(entry);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

/** TLS on the gRPC listener (README "Security"); the files are re-read when they change. */
const tlsSchema = z
  .strictObject({
    /** PEM certificate chain of the relay. */
    cert: name,
    /** PEM private key of `cert`. */
    key: name,
    /** PEM CA bundle client certificates are verified against (mTLS). */
    ca: name.optional(),
    requireClientCert: z.boolean().default(DEFAULT_TLS_REQUIRE_CLIENT_CERT),
    /** Client certificate subjects allowed to call (checked per call); omitted = any verified client. */
    allowedSubjects: z.array(subjectEntry).min(1, 'must list at least one subject (omit it to allow any verified client)').optional(),
  })
  .superRefine((tls, ctx) => {
    if (tls.ca !== undefined) return;
    if (tls.requireClientCert) ctx.addIssue({ code: 'custom', path: ['ca'], message: 'requireClientCert needs a CA to verify client certificates against' });
    if (tls.allowedSubjects) ctx.addIssue({ code: 'custom', path: ['ca'], message: 'allowedSubjects needs a CA to verify client certificates against' });
  });

export const relayConfigSchema = z
  .strictObject({
    dcId: name,
    bind: socketAddress.default(DEFAULT_BIND),
    metricsBind: metricsAddress.optional(),
    tls: tlsSchema.optional(),
    expectedUniqueBlocks: count(1, MAX_EXPECTED_UNIQUE_BLOCKS).default(DEFAULT_EXPECTED_UNIQUE_BLOCKS),
    limits: z
      .strictObject({
        maxCatalogSubscribers: count(1).default(DEFAULT_LIMITS.maxCatalogSubscribers),
        maxPoolStreamsTotal: count(1).default(DEFAULT_LIMITS.maxPoolStreamsTotal),
        maxSubscribersPerPool: count(1).default(DEFAULT_LIMITS.maxSubscribersPerPool),
        maxInitializedPoolHubs: count(1).default(DEFAULT_LIMITS.maxInitializedPoolHubs),
        maxReadinessSubscribers: count(1).default(DEFAULT_LIMITS.maxReadinessSubscribers),
        maxLoadSubscribers: count(1).default(DEFAULT_LIMITS.maxLoadSubscribers),
        maxServingLoadSubscribers: count(1).default(DEFAULT_LIMITS.maxServingLoadSubscribers),
        maxConnections: count(1).default(DEFAULT_LIMITS.maxConnections),
        maxConnectionsPerIp: count(1).optional(),
        maxTrackedBlocksPerPool: count(1, MAX_TRACKED_BLOCKS_PER_POOL).default(DEFAULT_LIMITS.maxTrackedBlocksPerPool),
        ingestThreads: count(0, MAX_INGEST_THREADS).default(DEFAULT_LIMITS.ingestThreads),
        reservePoolBlocks: count(0, MAX_RESERVE_POOL_BLOCKS).default(DEFAULT_LIMITS.reservePoolBlocks),
      })
      .refine((l) => l.reservePoolBlocks <= l.maxTrackedBlocksPerPool, {
        path: ['reservePoolBlocks'],
        message: 'must not exceed limits.maxTrackedBlocksPerPool (a pool never tracks more)',
      })
      .prefault({}),
    timing: z
      .strictObject({
        poolHeartbeatMs: timerMs.default(DEFAULT_TIMING.poolHeartbeatMs),
        readinessHeartbeatMs: timerMs.default(DEFAULT_TIMING.readinessHeartbeatMs),
        catalogHeartbeatMs: count(0, MAX_TIMER_DURATION_MS).default(DEFAULT_TIMING.catalogHeartbeatMs),
        snapshotProgressTimeoutMs: timerMs.default(DEFAULT_TIMING.snapshotProgressTimeoutMs),
        loadWindowMs: timerMs.default(DEFAULT_TIMING.loadWindowMs),
        publicationThreshold: count(1).default(DEFAULT_TIMING.publicationThreshold),
        publicationDelayMs: timerMs.default(DEFAULT_TIMING.publicationDelayMs),
        healthProbeMs: timerMs.default(DEFAULT_TIMING.healthProbeMs),
        connectionIdleMs: timerMs.default(DEFAULT_TIMING.connectionIdleMs),
        connectionFirstCallMs: timerMs.default(DEFAULT_TIMING.connectionFirstCallMs),
      })
      .prefault({}),
    queues: z
      .strictObject({
        publicationQueueCapacity: count(1).default(DEFAULT_QUEUES.publicationQueueCapacity),
        publicationQueueBytes: count(MIN_PUBLICATION_QUEUE_BYTES).default(DEFAULT_QUEUES.publicationQueueBytes),
        encodingConcurrency: count(1).default(DEFAULT_QUEUES.encodingConcurrency),
        maxMessageBytes: count(MIN_MAX_MESSAGE_BYTES).default(DEFAULT_QUEUES.maxMessageBytes),
      })
      .prefault({}),
    endpoints: z.array(endpointSchema).default([]),
    discovery: z
      .strictObject({ etcd: etcdDiscoverySchema.optional(), dynamo: dynamoDiscoverySchema.optional() })
      .refine((d) => (d.etcd === undefined) !== (d.dynamo === undefined), 'must have exactly one of etcd and dynamo')
      .optional(),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.discovery && cfg.endpoints.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['endpoints'], message: `the deployment comes from discovery.${cfg.discovery.etcd ? 'etcd' : 'dynamo'}; remove endpoints or discovery` });
    }
    const seen = new Map<string, number>();
    // Worker (instance) ids are global, as in Dynamo: health, metrics and KV sources key on them.
    const workers = new Map<bigint, number>();
    cfg.endpoints.forEach((ep, i) => {
      const key = `${ep.namespace}/${ep.component}/${ep.endpoint}`;
      const first = seen.get(key);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['endpoints', i], message: `duplicate endpoint ${key} (also endpoints.${first})` });
      } else {
        seen.set(key, i);
      }
      ep.workers.forEach((w, j) => {
        const other = workers.get(w.id);
        if (other !== undefined && other !== i) {
          ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'workers', j, 'id'], message: `worker id ${w.id} is also in endpoints.${other}` });
        }
        workers.set(w.id, i);
      });
    });
  });

export type RelayConfig = z.output<typeof relayConfigSchema>;
export type EndpointConfig = RelayConfig['endpoints'][number];
export type WorkerConfig = EndpointConfig['workers'][number];
export type AdapterConfig = EndpointConfig['adapters'][number];
export type TlsConfig = z.output<typeof tlsSchema>;
export type EtcdDiscoveryConfig = z.output<typeof etcdDiscoverySchema>;
export type DynamoDiscoveryConfig = z.output<typeof dynamoDiscoverySchema>;
export type WorkerType = (typeof WORKER_TYPES)[number];
