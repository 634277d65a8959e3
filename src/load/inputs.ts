// What the load builders need to know about each catalog pool, mapped by the producer from the
// deployment config and liveness. Pools are given in catalog order (sorted by pool id); the
// builders keep that order.
import type { ProducerIdentity } from '../wire/types';

export interface LoadWorker {
  id: bigint;
  dpStartRank: number;
  dpSize: number;
  /** KV capacity of each of the worker's ranks; 0 or undefined = unknown. */
  totalKvBlocks?: number;
  maxNumSeqs?: number;
  /** Authoritatively live now (health answered 2xx, or static `live` without health). */
  live: boolean;
}

export interface LoadPool {
  /** The pool's current producer generation. */
  producer: ProducerIdentity;
  /** Namespace of the pool's serving endpoint. */
  namespace: string;
  /** Canonical model ids of all the pool's registrations (LoRA ones included). */
  models: readonly string[];
  /** The pool's declared workers: their ranks are the expected ranks of pool load. */
  workers: readonly LoadWorker[];
}
