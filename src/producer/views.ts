// Pure mappings from the deployment model onto what the other layers take: catalog descriptors,
// KV-source configs, topology inputs and load inputs.
import { RESERVATION_WARN_MEMORY_SHARE, RESERVED_BYTES_PER_BLOCK } from '../config/defaults';
import { sourcesOf } from '../ingest/sources';
import type { KvEventEndpointConfig, SourceKey } from '../ingest/types';
import type { LoadPool } from '../load';
import type { PoolReservation } from '../native';
import type { TopologyEndpointInput } from '../topology';
import type { KvPoolDescriptor, KvPoolId, ProducerIdentity } from '../wire/types';
import type { Deployment, PoolSpec } from './deployment';

/** A worker's liveness: true/false when authoritative, undefined while its health is unanswered. */
export type Liveness = (workerId: bigint, staticLive: boolean) => boolean | undefined;

export function descriptor(spec: PoolSpec, producer: ProducerIdentity): KvPoolDescriptor {
  return {
    producer,
    servingEndpoint: spec.servingEndpoint,
    registrations: spec.registrations,
    querySemantics: spec.querySemantics,
    poolRoles: spec.poolRoles,
  };
}

export function kvSourceConfigs(specs: Iterable<PoolSpec>): KvEventEndpointConfig[] {
  const out: KvEventEndpointConfig[] = [];
  for (const spec of specs) {
    for (const w of spec.endpoint.workers) {
      if (!w.kvEvents) continue;
      // The pool's hashing semantics travel with the source: ingest decodes and hashes for the pool.
      const { kvBlockSize } = spec.querySemantics;
      out.push({ workerId: w.id, dpSize: w.dpSize, dpStartRank: w.dpStartRank, kvBlockSize, eagle: spec.endpoint.model.hashFormat === 'eagle', ...w.kvEvents });
    }
  }
  return out;
}

/** Every (worker, rank) source of a pool's workers with kvEvents, or with an event plane of all its workers. */
export function poolSources(spec: PoolSpec, eventPlane = false): SourceKey[] {
  if (!eventPlane) return kvSourceConfigs([spec]).flatMap((c) => sourcesOf(c));
  return spec.endpoint.workers.flatMap((w) => Array.from({ length: w.dpSize }, (_, i) => ({ workerId: w.id, dpRank: w.dpStartRank + i })));
}

/**
 * The tables a pool reserves at creation for limits.reservePoolBlocks (undefined: none): the owner
 * table for all of them, and a lineage table for each source its endpoint names, an even share each,
 * made with it (a source's first event then maps nothing on the thread that applies it). A source
 * added later takes the same share while the pool's budget lasts (native Reservation).
 */
export function poolReservation(blocks: number, spec: PoolSpec, eventPlane = false): PoolReservation | undefined {
  if (blocks === 0) return undefined;
  const sources = poolSources(spec, eventPlane);
  return { blocks, perSource: Math.ceil(blocks / Math.max(1, sources.length)), sources };
}

/** What limits.reservePoolBlocks takes over `pools` pools, against the host's memory (start-time warning). */
export interface ReservationMemory {
  perPoolBytes: number;
  totalBytes: number;
  pools: number;
  hostBytes: number;
  /** totalBytes is above RESERVATION_WARN_MEMORY_SHARE of hostBytes. */
  exceeds: boolean;
}

/** `pools`: the configured endpoints (each serves a pool); under discovery, unknown at start: counted as 1. */
export function reservationMemory(blocks: number, pools: number, hostBytes: number): ReservationMemory {
  const perPoolBytes = blocks * RESERVED_BYTES_PER_BLOCK;
  const counted = Math.max(1, pools);
  const totalBytes = perPoolBytes * counted;
  return { perPoolBytes, totalBytes, pools: counted, hostBytes, exceeds: totalBytes > RESERVATION_WARN_MEMORY_SHARE * hostBytes };
}

/** (worker, rank) sources a metadata update takes away from a pool (e.g. a worker whose lease ended). */
export function droppedSources(before: PoolSpec, after: PoolSpec, eventPlane = false): SourceKey[] {
  const key = (s: SourceKey): string => `${s.workerId}:${s.dpRank}`;
  const kept = new Set(poolSources(after, eventPlane).map(key));
  return poolSources(before, eventPlane).filter((s) => !kept.has(key(s)));
}

export function topologyInputs(deployment: Deployment, liveness: Liveness, poolIdOf: (key: string) => KvPoolId | undefined): TopologyEndpointInput[] {
  return deployment.topology.map((t) => ({
    namespace: t.endpoint.namespace,
    component: t.endpoint.component,
    endpoint: t.endpoint.endpoint,
    model: t.endpoint.model.name,
    workerType: t.endpoint.workerType,
    needs: t.endpoint.needs,
    workers: t.endpoint.workers.map((w) => ({ id: w.id, workerType: w.workerType, needs: w.needs, live: liveness(w.id, w.live) })),
    adapters: t.adapters,
    poolId: t.poolKey === undefined ? undefined : poolIdOf(t.poolKey),
  }));
}

export function loadPool(spec: PoolSpec, producer: ProducerIdentity, liveness: Liveness): LoadPool {
  return {
    producer,
    namespace: spec.servingEndpoint.namespace,
    models: spec.registrations.map((r) => r.canonicalModelId),
    workers: spec.endpoint.workers.map((w) => ({
      id: w.id,
      dpStartRank: w.dpStartRank,
      dpSize: w.dpSize,
      totalKvBlocks: w.totalKvBlocks,
      maxNumSeqs: w.maxNumSeqs,
      live: liveness(w.id, w.live) === true,
    })),
  };
}
