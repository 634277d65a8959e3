// The deployment's endpoints from the entries under a discovery prefix. Pure.
//
// Each value is validated alone by the config file's own schemas (an endpoint value like an
// `endpoints` entry, a worker value like a `workers` entry), so one bad value is rejected with its
// key and problem while every other entry is kept. A worker joins the endpoint its key names, after
// the endpoint value's own (static) workers; worker ids stay unique across the deployment, as in a
// config file. The result is in key order (workers by id), so an unchanged etcd state assembles to
// an identical deployment and applying it changes nothing.
import { issuesToError } from '../config/load';
import { MAX_DISCOVERY_VALUE_BYTES } from '../config/limits';
import { endpointSchema, workerSchema, type EndpointConfig, type WorkerConfig } from '../config/schema';
import { endpointName } from '../producer/deployment';
import { parseKey, type DiscoveryKey, type EndpointTriple } from './keys';

export interface Rejection {
  /** The key relative to the prefix. */
  key: string;
  problem: string;
}

export interface Assembly {
  endpoints: EndpointConfig[];
  rejected: Rejection[];
  /** Worker keys whose endpoint has no (valid) entry yet: kept aside until it appears. */
  waiting: string[];
}

type Schema = typeof endpointSchema | typeof workerSchema;

/**
 * Remembers each key's validated value until its text changes, so a registration among a thousand
 * workers validates one value, not all of them.
 */
export class ValueCache {
  private readonly values = new Map<string, { text: string; value: unknown }>();
  private readonly keys = new Map<string, DiscoveryKey | undefined>();

  /** parseKey, remembered. */
  key(key: string): DiscoveryKey | undefined {
    if (this.keys.has(key)) return this.keys.get(key);
    const parsed = parseKey(key);
    this.keys.set(key, parsed);
    return parsed;
  }

  parse(key: string, text: string, schema: Schema): unknown {
    const hit = this.values.get(key);
    if (hit?.text === text) return hit.value;
    const value = parseValue(key, text, schema);
    this.values.set(key, { text, value });
    return value;
  }

  /** Forgets keys that are gone. */
  retain(keys: ReadonlyMap<string, unknown>): void {
    for (const key of this.values.keys()) if (!keys.has(key)) this.values.delete(key);
    for (const key of this.keys.keys()) if (!keys.has(key)) this.keys.delete(key);
  }
}

/** `entries`: key relative to the prefix → value. Keys outside the endpoint/worker layout are ignored. */
export function assembleEndpoints(entries: ReadonlyMap<string, string>, cache = new ValueCache()): Assembly {
  cache.retain(entries);
  const rejected: Rejection[] = [];
  const waiting: string[] = [];
  const reject = (key: string, problem: string): void => void rejected.push({ key, problem });
  const endpoints = new Map<string, EndpointConfig>();
  const workers: { key: string; triple: EndpointTriple; worker: WorkerConfig }[] = [];

  for (const key of [...entries.keys()].sort()) {
    const parsed = cache.key(key);
    if (parsed?.kind !== 'endpoint' && parsed?.kind !== 'worker') continue;
    const value = cache.parse(key, entries.get(key)!, parsed.kind === 'endpoint' ? endpointSchema : workerSchema);
    if (typeof value === 'string') {
      reject(key, value);
    } else if (parsed.kind === 'endpoint') {
      const ep = value as EndpointConfig;
      if (endpointName(ep) !== endpointName(parsed.triple)) reject(key, `names ${endpointName(ep)}, not the endpoint of its key`);
      else endpoints.set(endpointName(ep), ep);
    } else {
      const worker = value as WorkerConfig;
      if (worker.id.toString() !== parsed.workerId) reject(key, `has id ${worker.id}, not the worker id of its key`);
      else workers.push({ key, triple: parsed.triple, worker });
    }
  }

  // Static worker ids are global too: a later endpoint (key order) that reuses one is rejected.
  const owner = new Map<bigint, string>();
  for (const [name, ep] of endpoints) {
    const clash = ep.workers.find((w) => owner.has(w.id));
    if (clash) {
      reject(`endpoints/${name}`, `worker id ${clash.id} is also in ${owner.get(clash.id)}`);
      endpoints.delete(name);
      continue;
    }
    for (const w of ep.workers) owner.set(w.id, name);
  }
  const joined = new Map<string, WorkerConfig[]>();
  workers.sort((a, b) => (a.worker.id < b.worker.id ? -1 : a.worker.id > b.worker.id ? 1 : 0));
  for (const { key, triple, worker } of workers) {
    const name = endpointName(triple);
    if (!endpoints.has(name)) {
      waiting.push(key);
      continue;
    }
    const other = owner.get(worker.id);
    if (other !== undefined) {
      reject(key, `worker id ${worker.id} is also in ${other}`);
      continue;
    }
    owner.set(worker.id, name);
    joined.set(name, [...(joined.get(name) ?? []), worker]);
  }
  const result = [...endpoints].map(([name, ep]) => ({ ...ep, workers: [...ep.workers, ...(joined.get(name) ?? [])] }));
  return { endpoints: result, rejected, waiting };
}

/** The validated value, or the problem as one line. */
function parseValue(key: string, text: string, schema: Schema): unknown {
  if (Buffer.byteLength(text, 'utf8') > MAX_DISCOVERY_VALUE_BYTES) return `is larger than ${MAX_DISCOVERY_VALUE_BYTES} bytes`;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return `invalid JSON: ${(err as Error).message}`;
  }
  const result = schema.safeParse(raw, { reportInput: true });
  if (result.success) return result.data;
  const err = issuesToError(key, result.error.issues, schema);
  return `${err.field}: ${err.problem}`;
}
