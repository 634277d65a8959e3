// A Dynamo deployment's discovery, watched: a live copy of etcd's `v1/` (the same mirror as our own
// discovery: full read, then a watch; kept and marked stale while etcd is lost, resynced as one change
// when it is back) projected on every change (project.ts) and applied through the same diff path as
// a config reload: the producer gets the whole deployment, the event plane its channels and workers.
// Keys live under their process's lease, so a worker whose lease expires leaves with its keys: its
// sources are reset and its blocks removed (producer diff), and it stops being live.
import type { Etcd3 } from 'etcd3';
import type { DynamoDiscoveryConfig } from '../../config/schema';
import { createEtcdClient } from '../../discovery/etcd-client';
import { PrefixMirror } from '../../discovery/mirror';
import { PassLoop } from '../../discovery/pass-loop';
import { clipForLog, type Logger } from '../../log';
import { buildDeployment, type Deployment } from '../../producer/deployment';
import type { EventPlane } from '../event-plane/plane';
import { advertisedSources } from '../event-plane/source-gate';
import { DYNAMO_PREFIX } from './keys';
import { projectDynamo } from './project';
import type { ParseMemo } from './values';
import { EventSourceTracker, type EventSourceCounts } from './source-tracker';

export interface DynamoDiscoveryOptions {
  config: DynamoDiscoveryConfig;
  dcId: string;
  producer: { applyDeployment(deployment: Deployment): Promise<void>; setAvailabilityKnown(known: boolean): void };
  eventPlane: EventPlane;
  logger: Logger;
}

/** What /metrics shows of Dynamo discovery. */
export interface DynamoDiscoveryMetrics {
  stale: boolean;
  rejectedEntries: number;
  conflicts: number;
  endpoints: number;
  workers: number;
  /** Serving endpoints whose pool does not bind for want of an active KV event source (v1/event_sources). */
  unboundEndpoints: number;
  /** Logical KV event sources (worker, dp rank) by status, and invalid v1/event_sources entries. */
  eventSources: EventSourceCounts;
}

export class DynamoDiscovery {
  private readonly client: Etcd3;
  private readonly mirror: PrefixMirror;
  private readonly logger: Logger;
  private rejected = new Map<string, string>();
  /** Values parsed by earlier passes (a pass parses only what changed). */
  private readonly parsed: ParseMemo = new Map();
  private conflicts = new Set<string>();
  private endpoints = 0;
  private workers = 0;
  private unbound = 0;
  private readonly sources: EventSourceTracker;
  private readonly passes = new PassLoop(() => this.apply());
  private closed = false;

  constructor(private readonly options: DynamoDiscoveryOptions) {
    this.logger = options.logger.child({ component: 'dynamo-discovery' });
    this.client = createEtcdClient(options.config.etcd);
    this.sources = new EventSourceTracker(this.logger);
    this.mirror = new PrefixMirror(this.client, DYNAMO_PREFIX, this.logger);
    this.mirror.on('change', () => this.passes.schedule());
    // Dynamo's availability is its instance watch: lost with etcd, readiness is UNKNOWN until a resync.
    this.mirror.on('stale', (stale) => {
      if (stale) options.producer.setAvailabilityKnown(false);
    });
  }

  /** Starts reading (retrying with backoff while etcd is unreachable); resolves after the first read was applied. */
  async start(): Promise<void> {
    this.logger.info({ endpoints: this.options.config.etcd.endpoints, namespaces: this.options.config.namespaces ?? 'all' }, 'reading the Dynamo deployment from etcd');
    await this.mirror.start();
    await this.passes.idle;
  }

  metrics(): DynamoDiscoveryMetrics {
    return { stale: this.mirror.stale, rejectedEntries: this.rejected.size, conflicts: this.conflicts.size, endpoints: this.endpoints, workers: this.workers, unboundEndpoints: this.unbound, eventSources: this.sources.metrics };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.mirror.close();
    await this.passes.close();
    this.client.close();
  }

  private async apply(): Promise<void> {
    // The mirror's keys are relative to `v1/`; the projection reads full keys.
    const entries = new Map<string, string>();
    for (const [key, value] of this.mirror.entries) entries.set(DYNAMO_PREFIX + key, value);
    const p = projectDynamo(entries, this.options.config.namespaces, this.sources.changed(entries), this.parsed);
    const rejected = new Map(p.rejected.map((r) => [r.key, r.problem]));
    for (const [key, problem] of rejected) if (this.rejected.get(key) !== problem) this.logger.error({ key: clipForLog(key), problem: clipForLog(problem) }, 'Dynamo discovery entry rejected; the rest of the deployment is kept');
    this.rejected = rejected;
    const conflicts = new Set(p.conflicts);
    for (const c of conflicts) if (!this.conflicts.has(c)) this.logger.warn({ conflict: clipForLog(c) }, 'Dynamo deployment conflict');
    this.conflicts = conflicts;
    this.sources.report(p.eventSources, p.invalidSources);
    this.endpoints = p.endpoints.length;
    this.workers = p.workers.size;
    this.unbound = p.unbound.size;
    try {
      // Workers first, so the events of a new worker are not dropped as unknown; then the pools.
      await this.options.eventPlane.update(p.channels, p.workers, advertisedSources(p.eventSources));
      await this.options.producer.applyDeployment(buildDeployment(this.options.dcId, p.endpoints, { eventPlane: true, unbound: p.unbound }));
      if (!this.mirror.stale) this.options.producer.setAvailabilityKnown(true);
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'applying the Dynamo deployment failed');
    }
  }
}
