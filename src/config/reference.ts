// The configuration reference (docs/configuration.md) generated from the config schema: every field
// with its type, default and bounds as the schema enforces them, and its meaning from DESCRIPTIONS
// below. A field without a description, or a description of a field the schema does not have, is an
// error, so the page cannot fall behind the schema (test/docs/configuration.test.ts).
//
//   npm run docs:config    # rewrites the generated part of docs/configuration.md
import * as fs from 'fs';
import * as path from 'path';
import { z } from 'zod';
import { PER_IP_CONNECTION_SHARE } from './defaults';
import { MAX_INGEST_THREADS } from './limits';
import { relayConfigSchema } from './schema';

/** What each field means, by its path (`[]` marks an array's items). */
export const DESCRIPTIONS: Readonly<Record<string, string>> = {
  dcId: "This data center's name; `dc_id` = stable_dc_id(dcId) goes into every pool id. Relays with the same dcId and etcd prefix are shards of one relay.",
  bind: 'gRPC listen address, numeric `IP:port` (`[::1]:5561` for IPv6); port 0 picks a free one. `--bind` overrides it.',
  metricsBind: 'Plaintext HTTP listener for `GET /metrics` and `GET /healthz`: `IP:port`, or a port alone (binds 127.0.0.1). Omitted: no HTTP listener.',
  tls: 'TLS on the gRPC listener (docs/security.md); omitted = plaintext, as Dynamo\'s relay. The files are re-read when they change.',
  'tls.cert': 'PEM certificate chain of the relay.',
  'tls.key': 'PEM private key of `cert`.',
  'tls.ca': 'PEM CA bundle client certificates are verified against (mTLS).',
  'tls.requireClientCert': 'Refuse clients without a certificate the CA signed (needs `ca`). When false a certificate is asked for, not required.',
  'tls.allowedSubjects': 'Client certificate subjects allowed to call, checked per call (needs `ca`): a bare name matches a subject whose only CN it is (a certificate with several CNs matches no bare name), `CN=x, O=y` the whole subject. Omitted: any verified client.',
  expectedUniqueBlocks: "Sizes each pool's cuckoo filter: next_pow2(max(2, floor((5n + 15) / 16))) buckets of 4 slots (8 bytes each).",
  limits: 'Stream, connection and memory limits (start-time).',
  'limits.maxCatalogSubscribers': 'Concurrent WatchKvPoolCatalog streams; one more is refused RESOURCE_EXHAUSTED.',
  'limits.maxPoolStreamsTotal': 'Concurrent SubscribeKvPool streams over all pools.',
  'limits.maxSubscribersPerPool': 'Concurrent SubscribeKvPool streams of one pool.',
  'limits.maxInitializedPoolHubs': 'Pool publication hubs kept initialized (with a snapshot image); an idle one is evicted to make room.',
  'limits.maxReadinessSubscribers': 'Concurrent SubscribeServingReadiness streams.',
  'limits.maxLoadSubscribers': 'Concurrent SubscribeKvPoolLoad streams.',
  'limits.maxServingLoadSubscribers': 'Concurrent SubscribeServingLoad streams.',
  'limits.maxConnections': 'Open gRPC connections; further ones are closed on accept. A quarter of them is kept for sources that made an authorized call before.',
  'limits.maxConnectionsPerIp': 'Open gRPC connections from one source (an IPv4 address, an IPv6 /64); further ones are closed on accept (32 with the default `maxConnections`).',
  'limits.maxTrackedBlocksPerPool': 'Blocks one pool tracks over all its sources (~46 B each); a store that would go past it is rejected whole and counted (`pool_stores_rejected_at_limit_total`); removals make room.',
  // A count, not a switch that reserves for expectedUniqueBlocks: that field sizes the filter, which is
  // part of every pool's wire format, while this one is memory traded for CPU alone; an operator may
  // reserve for the working set a pool reaches within minutes and let rare peaks grow the tables.
  'limits.reservePoolBlocks':
    "Blocks each pool's tables are sized for when it is created: its owner table, and its engine-id (lineage) tables split evenly over the (worker, rank) sources its endpoint names. Filling to there grows no table (about half of a filling pool's apply CPU); the memory (~45-50 B per reserved block, per pool) is taken at creation and counted in `kv_dc_relay_pool_state_bytes`. 0 = none: the tables grow as they fill. At most `maxTrackedBlocksPerPool`. The sources the endpoint names get their lineage tables at creation; a pool's replacement generation reserves only once its predecessor's tables are freed (the peak is one reservation per pool).",
  'limits.ingestThreads': 'Worker threads that run the engines\' KV-event subscriptions (a worker always on the same thread); 0 = on the main thread.',
  timing: 'Heartbeats, windows and timeouts (start-time).',
  'timing.poolHeartbeatMs': 'Pool stream heartbeat interval while no delta is published.',
  'timing.readinessHeartbeatMs': 'Readiness stream heartbeat interval.',
  'timing.catalogHeartbeatMs': 'Re-send the current catalog (same revision) this often; 0 = off (variant C\'s catalog heartbeat).',
  'timing.snapshotProgressTimeoutMs': 'A subscriber that takes no snapshot chunk for this long is ended.',
  'timing.loadWindowMs': 'Load window: KV usage is scraped and published once per window.',
  'timing.publicationThreshold': 'A pool cuts a delta once this many events changed its filter...',
  'timing.publicationDelayMs': '...or this long after the first change, whichever comes first.',
  'timing.healthProbeMs': 'Interval of the workers\' `/health` probes.',
  'timing.connectionIdleMs': 'A connection with no open stream this long is closed (clients reconnect on their next call).',
  'timing.connectionFirstCallMs': 'A connection on which no authorized call started this long after accept is closed (covers the TLS handshake, the HTTP/2 preface and the first request).',
  queues: 'Subscriber queues and message sizes (start-time).',
  'queues.publicationQueueCapacity': 'Frames a subscriber may have queued; past it (or the bytes) it ends SUBSCRIBER_LAGGED.',
  'queues.publicationQueueBytes': 'Bytes a subscriber may have queued.',
  'queues.encodingConcurrency': 'Snapshot images encoded at once (off the event loop).',
  'queues.maxMessageBytes': 'Largest gRPC message the relay sends (a snapshot chunk or delta frame).',
  endpoints: 'The deployment: one entry per serving endpoint (watched: a valid change applies live as a diff). Not with `discovery`.',
  'endpoints[].namespace': 'Dynamo namespace of the endpoint.',
  'endpoints[].component': 'Dynamo component.',
  'endpoints[].endpoint': 'Dynamo endpoint name.',
  'endpoints[].model': 'The model the endpoint serves.',
  'endpoints[].model.name': 'Canonical model id (the served name).',
  'endpoints[].model.sourcePath': 'Cache-semantics material (weights path or id); defaults to `name`. Part of the pool id.',
  'endpoints[].model.kvBlockSize': "Tokens per KV block: must equal the engine's block (page) size. Part of the pool id.",
  'endpoints[].model.hashFormat': '`standard`, or `eagle` (EAGLE speculative decoding hashes shifted windows). Part of the pool id.',
  'endpoints[].model.aliases': 'Other names the model is queried by.',
  'endpoints[].indexerIdentity': 'Explicit identity maps (identity-topology-load.md); change the pool id.',
  'endpoints[].indexerIdentity.semantics': 'Cache-semantics map: key/value strings hashed into the pool id.',
  'endpoints[].indexerIdentity.routingScope': 'Routing-scope map: key/value strings hashed into the pool id.',
  'endpoints[].workerType': '`prefill`, `decode`, `encode` or `aggregated`; omitted = legacy (no role).',
  'endpoints[].needs': 'Readiness dependencies: alternatives (OR) of worker types that must all (AND) be live, e.g. `[[prefill]]` for a decode endpoint.',
  'endpoints[].adapters': 'LoRA adapters served on this endpoint.',
  'endpoints[].adapters[].name': "Adapter name (the `lora_name` the engine's events carry: the hash salt).",
  'endpoints[].adapters[].servedModel': 'Model name clients use for the adapter.',
  'endpoints[].adapters[].workers': 'Worker ids serving it; omitted = every worker of the endpoint.',
  'endpoints[].workers': "The endpoint's workers (engine instances).",
  'endpoints[].workers[].id': 'Worker (instance) id, u64; unique over the whole deployment. Quote it as a decimal string above 2^53.',
  'endpoints[].workers[].dpSize': 'Data-parallel ranks: the worker publishes ranks dpStartRank .. dpStartRank + dpSize - 1.',
  'endpoints[].workers[].dpStartRank': 'First data-parallel rank.',
  'endpoints[].workers[].totalKvBlocks': 'KV capacity per rank in blocks (load: used = usage x this); 0 or omitted = unknown.',
  'endpoints[].workers[].maxNumSeqs': 'Concurrent sequences per rank (serving load `max_concurrency`).',
  'endpoints[].workers[].workerType': "This worker's own worker type, for an endpoint whose workers differ (e.g. a Dynamo endpoint with prefill and decode cards); omitted = the endpoint's `workerType` and `needs`.",
  'endpoints[].workers[].needs': "This worker's own readiness dependencies (with its own `workerType`); omitted = none.",
  'endpoints[].workers[].live': 'Static availability when there is no `health`.',
  'endpoints[].workers[].health': 'Health probe; when set it decides liveness (2xx = live).',
  'endpoints[].workers[].health.url': 'HTTP(S) URL of the worker\'s health endpoint (vLLM: `/health`).',
  'endpoints[].workers[].kvEvents': "The engine's KV-event publisher (vLLM/SGLang ZMQ wire format). A pool materializes once one of its workers has it.",
  'endpoints[].workers[].kvEvents.endpoint': 'ZMQ endpoint of rank dpStartRank\'s PUB (`tcp://HOST:PORT`); rank r publishes on port + r - dpStartRank, as vLLM does.',
  'endpoints[].workers[].kvEvents.replayEndpoint': "ZMQ endpoint of the engine's replay ROUTER (per rank, same offsets); the relay asks it for what it missed.",
  'endpoints[].workers[].kvEvents.topic': 'ZMQ topic the engine publishes under.',
  'endpoints[].workers[].kvEvents.mode': '`connect`: the relay dials the engine\'s PUB; `bind`: the relay binds and engines dial in.',
  'endpoints[].workers[].kvEvents.allowedPeers': 'Bind mode: the IP addresses allowed to publish (others are refused before the handshake ends). Canonicalized as libzmq reports peers (`0:0:0:0:0:0:0:1` is `::1`, `::ffff:7f00:1` is `127.0.0.1`). Bind mode needs it unless `allowAnyPeer` is true.',
  'endpoints[].workers[].kvEvents.allowAnyPeer': 'Bind mode without `allowedPeers`: anyone who reaches the port may publish, and can make the relay hold an unfinished multipart message of any size (libzmq bounds frames, not messages). Must be set to true to run bind mode without `allowedPeers`.',
  'endpoints[].workers[].metrics': "The worker's Prometheus metrics, scraped for load.",
  'endpoints[].workers[].metrics.url': 'HTTP(S) URL of the metrics endpoint (vLLM: `/metrics`).',
  'endpoints[].workers[].metrics.format': 'Metric names to read: `vllm` (`vllm:kv_cache_usage_perc` per engine rank).',
  discovery: 'Read the deployment from etcd instead of `endpoints`: this project\'s layout (`etcd`, docs/scaling-out.md) or a Dynamo deployment\'s own (`dynamo`); exactly one of them.',
  'discovery.etcd': 'The etcd cluster and key prefix of this DC\'s deployment.',
  'discovery.etcd.endpoints': 'etcd members, `host:port` or `http(s)://host:port`.',
  'discovery.etcd.prefix': "Key prefix of this data center's deployment; relays with the same prefix and dcId are shards of one relay.",
  'discovery.etcd.tls': 'TLS to etcd.',
  'discovery.etcd.tls.caFile': 'PEM CA bundle etcd is verified against.',
  'discovery.etcd.tls.certFile': 'Client certificate (with keyFile).',
  'discovery.etcd.tls.keyFile': 'Client private key (with certFile).',
  'discovery.etcd.auth': 'etcd user authentication.',
  'discovery.etcd.auth.username': 'etcd user.',
  'discovery.etcd.auth.password': 'Its password.',
  'discovery.etcd.leaseTtlSeconds': "TTL of this shard's lease: a dead shard's pools move within it.",
  'discovery.etcd.advertise': 'Address consumers reach this shard at (default: the bound gRPC address).',
  'discovery.etcd.loneShardKeepsServing': 'A shard that cannot confirm its lease while its mirror shows no other live shard keeps serving (stale) instead of stopping within the TTL. For a DC that runs one relay and would rather serve through an etcd outage: a shard started while this one is cut off then serves the same pools until it reconnects.',
  'discovery.dynamo': "A Dynamo deployment: its cards, instances and event channels from its etcd (`v1/`), its KV events from its event plane (NATS, JetStream, ZMQ); no per-engine config (`--dynamo-etcd`, `--dynamo-nats`, `--dynamo-namespaces`).",
  'discovery.dynamo.etcd': "The deployment's etcd (Dynamo's discovery store).",
  'discovery.dynamo.etcd.endpoints': 'etcd members, `host:port` or `http(s)://host:port`.',
  'discovery.dynamo.etcd.tls': 'TLS to etcd.',
  'discovery.dynamo.etcd.tls.caFile': 'PEM CA bundle etcd is verified against.',
  'discovery.dynamo.etcd.tls.certFile': 'Client certificate (with keyFile).',
  'discovery.dynamo.etcd.tls.keyFile': 'Client private key (with certFile).',
  'discovery.dynamo.etcd.auth': 'etcd user authentication.',
  'discovery.dynamo.etcd.auth.username': 'etcd user.',
  'discovery.dynamo.etcd.auth.password': 'Its password.',
  'discovery.dynamo.nats': "The deployment's NATS (its event plane on NATS, JetStream streams, kv_metrics); omitted = ZMQ event-plane channels only.",
  'discovery.dynamo.nats.servers': 'NATS servers, `nats://host:port`.',
  'discovery.dynamo.namespaces': 'Dynamo namespaces to serve; omitted = every namespace found.',
};

/** Defaults that depend on the machine or on another field, written as the rule instead of one value. */
const MACHINE_DEFAULTS: Readonly<Record<string, string>> = {
  'limits.ingestThreads': `the machine's available parallelism, at most ${MAX_INGEST_THREADS}`,
  'limits.maxConnectionsPerIp': `1/${1 / PER_IP_CONNECTION_SHARE} of \`maxConnections\`, at least 1`,
};

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  minItems?: number;
  anyOf?: JsonSchema[];
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
}

export interface FieldRow {
  path: string;
  type: string;
  required: boolean;
  defaultValue: string;
  bounds: string;
  description: string;
}

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  if (s.anyOf) return [...new Set(s.anyOf.map(typeOf))].join(' or ');
  const type = Array.isArray(s.type) ? s.type.join(' or ') : s.type ?? 'any';
  if (type === 'array') return `list of ${s.items ? typeOf(s.items) : 'any'}`;
  if (type === 'object' && !s.properties && s.additionalProperties) return 'map of string to string';
  return type;
}

function bounds(s: JsonSchema): string {
  const numeric = s.anyOf?.find((a) => a.minimum !== undefined) ?? s;
  const parts: string[] = [];
  if (numeric.minimum !== undefined && numeric.maximum !== undefined) {
    parts.push(numeric.maximum >= Number.MAX_SAFE_INTEGER ? `≥ ${numeric.minimum}` : `${numeric.minimum} .. ${numeric.maximum}`);
  } else if (numeric.minimum !== undefined) {
    parts.push(`≥ ${numeric.minimum}`);
  }
  if (s.minLength) parts.push('non-empty');
  if (s.minItems) parts.push(`at least ${s.minItems}`);
  return parts.join(', ');
}

function defaultOf(path: string, s: JsonSchema): string {
  if (MACHINE_DEFAULTS[path]) return MACHINE_DEFAULTS[path];
  if (s.default === undefined) return '';
  if (typeof s.default === 'object' && s.default !== null && Object.keys(s.default).length === 0) return '';
  return `\`${JSON.stringify(s.default)}\``;
}

/** Every field of the schema, depth first, in the schema's order. */
export function configFields(): FieldRow[] {
  const root = z.toJSONSchema(relayConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const rows: FieldRow[] = [];
  const visit = (schema: JsonSchema, prefix: string): void => {
    const required = new Set(schema.required ?? []);
    for (const [key, field] of Object.entries(schema.properties ?? {})) {
      const at = prefix ? `${prefix}.${key}` : key;
      rows.push({ path: at, type: typeOf(field), required: required.has(key), defaultValue: defaultOf(at, field), bounds: bounds(field), description: DESCRIPTIONS[at] ?? '' });
      if (field.properties) visit(field, at);
      if (field.items?.properties) visit(field.items, `${at}[]`);
    }
  };
  visit(root, '');
  return rows;
}

/** Paths with no description and descriptions of no path: both must be empty. */
export function undocumented(): { missing: string[]; unknown: string[] } {
  const paths = new Set(configFields().map((r) => r.path));
  return { missing: [...paths].filter((p) => !DESCRIPTIONS[p]), unknown: Object.keys(DESCRIPTIONS).filter((p) => !paths.has(p)) };
}

export const BEGIN = '<!-- BEGIN GENERATED: config reference (npm run docs:config) -->';
export const END = '<!-- END GENERATED: config reference -->';

/** The generated part of docs/configuration.md: one table per section of the file. */
export function configReference(): string {
  const rows = configFields();
  const section = (row: FieldRow): string => (row.path.includes('.') ? row.path.slice(0, row.path.lastIndexOf('.')) : '');
  const sections = [...new Set(rows.map(section))];
  const out: string[] = [];
  for (const name of sections) {
    out.push(`### ${name === '' ? 'Top level' : `\`${name}\``}`, '');
    const about = DESCRIPTIONS[name.replace(/\[\]$/, '')];
    if (name !== '' && about) out.push(about, '');
    out.push('| Field | Type | Default | Bounds | Meaning |', '| --- | --- | --- | --- | --- |');
    for (const row of rows.filter((r) => section(r) === name)) {
      const field = `\`${row.path.slice(name === '' ? 0 : name.length + 1)}\`${row.required ? ' (required)' : ''}`;
      out.push(`| ${field} | ${row.type} | ${row.defaultValue} | ${row.bounds} | ${row.description.replace(/\|/g, '\\|')} |`);
    }
    out.push('');
  }
  return `${BEGIN}\n\n${out.join('\n')}${END}`;
}

/** docs/configuration.md with its generated part replaced by `configReference()`. */
export function withReference(page: string): string {
  const begin = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/configuration.md has no ${BEGIN} ... ${END} block`);
  return page.slice(0, begin) + configReference() + page.slice(end + END.length);
}

if (require.main === module) {
  const { missing, unknown } = undocumented();
  if (missing.length || unknown.length) {
    console.error(`config fields without a description: ${missing.join(', ') || '-'}; descriptions of no field: ${unknown.join(', ') || '-'}`);
    process.exit(1);
  }
  const file = path.join(__dirname, '..', '..', 'docs', 'configuration.md');
  fs.writeFileSync(file, withReference(fs.readFileSync(file, 'utf8')));
  console.log(`wrote ${file}`);
}
