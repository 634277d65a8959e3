// Counters of the publication layer, read by the metrics exporter (names in wire-contract.md §10.1
// map one to one: kv_dc_relay_subscribers{stream}, …_subscriber_lagged_total{stream},
// …_subscriber_limit_rejected_total{stream,scope}, …_pool_heartbeats_total, …_load_updates_total,
// …_{requested,initialized,ready,idle}_publication_hub_count).

export type StreamKind = 'catalog' | 'pool' | 'readiness' | 'load' | 'serving_load';
export type LimitScope = 'total' | 'per_pool' | 'initialized_hub';

export interface PublicationStats {
  subscribers: Record<StreamKind, number>;
  laggedTotal: Record<StreamKind, number>;
  /** Keyed `${stream}/${scope}`, e.g. 'pool/per_pool'. */
  limitRejectedTotal: Record<string, number>;
  poolHeartbeatsTotal: number;
  loadUpdatesTotal: number;
  /**
   * Hubs by stage. Requested: created by a generation's first subscribe and not ended (each counts
   * against the initialized-hub limit from then on), including those still taking their first
   * image. Initialized: those that adopted it. Ready: holding a contiguous image — the same set as
   * initialized here, since a hub keeps its image contiguous (or ends) once it has one. Idle: ready
   * hubs without subscribers, admissions or snapshot work.
   */
  requestedHubs: number;
  initializedHubs: number;
  readyHubs: number;
  idleHubs: number;
}

const perStream = (): Record<StreamKind, number> => ({ catalog: 0, pool: 0, readiness: 0, load: 0, serving_load: 0 });

export class PublicationCounters {
  readonly subscribers = perStream();
  readonly laggedTotal = perStream();
  readonly limitRejectedTotal: Record<string, number> = {};
  poolHeartbeatsTotal = 0;
  loadUpdatesTotal = 0;

  rejected(stream: StreamKind, scope: LimitScope): void {
    const key = `${stream}/${scope}`;
    this.limitRejectedTotal[key] = (this.limitRejectedTotal[key] ?? 0) + 1;
  }
}
