// A reference model of one pool's KV state (hashing-ckf-cbi1.md §4.2-§4.5), fed the events an
// engine publishes: per-source lineage (engine id → canonical hash), owner counts across sources, a
// store whose parent is unknown rejected whole, unknown removals ignored, a reset forgetting one
// source. Its canonical set is what a consumer's replica must hold, nothing more.
import type { PoolReplica } from '../../src/client/replica';
import { bucketContains, ckfPrepare } from '../../src/native';
import type { SimEvent, SimulatedEngine } from '../../src/sim';
import { expectedHashes } from '../e2e/harness';

export class PoolModel {
  private readonly lineage = new Map<string, Map<bigint, bigint>>();
  private readonly owners = new Map<bigint, number>();
  /** Events the model rejected (unknown parent, inconsistent lineage). */
  rejected = 0;

  constructor(private readonly blockSize: number) {}

  /** Feeds every batch `engine` publishes from now on (live or dropped: replay delivers both) into the model. */
  follow(engine: SimulatedEngine, workerId: number): void {
    const publish = engine.publish.bind(engine);
    engine.publish = (events, opts = {}) => {
      this.apply(`${workerId}/${opts.rank ?? engine.dpStartRank}`, events);
      return publish(events, opts);
    };
  }

  apply(source: string, events: readonly SimEvent[]): void {
    let lineage = this.lineage.get(source);
    if (!lineage) this.lineage.set(source, (lineage = new Map()));
    for (const e of events) {
      if (e.type === 'BlockStored') this.store(lineage, e);
      else if (e.type === 'BlockRemoved') for (const ext of e.blockHashes) this.remove(lineage, ext);
      else for (const ext of [...lineage.keys()]) this.remove(lineage, ext);
    }
  }

  /** The relay lost this source's history: its blocks are forgotten. */
  reset(source: string): void {
    const lineage = this.lineage.get(source);
    if (lineage) for (const ext of [...lineage.keys()]) this.remove(lineage, ext);
  }

  /** The canonical hashes `source` holds in the model. */
  sourceHashes(source: string): bigint[] {
    return [...(this.lineage.get(source)?.values() ?? [])];
  }

  hashes(): bigint[] {
    return [...this.owners.keys()];
  }

  private store(lineage: Map<bigint, bigint>, e: Extract<SimEvent, { type: 'BlockStored' }>): void {
    let parent: bigint | undefined;
    if (e.parentBlockHash !== undefined && e.parentBlockHash !== null) {
      parent = lineage.get(e.parentBlockHash);
      if (parent === undefined) return void (this.rejected += 1);
    }
    const canonical = expectedHashes([...e.tokenIds], e.loraName, this.blockSize, parent);
    const fresh: [bigint, bigint][] = [];
    for (let i = 0; i < e.blockHashes.length; i++) {
      const existing = lineage.get(e.blockHashes[i]);
      if (existing !== undefined && existing !== canonical[i]) return void (this.rejected += 1);
      if (existing === undefined) fresh.push([e.blockHashes[i], canonical[i]]);
    }
    for (const [ext, hash] of fresh) {
      lineage.set(ext, hash);
      this.owners.set(hash, (this.owners.get(hash) ?? 0) + 1);
    }
  }

  private remove(lineage: Map<bigint, bigint>, ext: bigint): void {
    const hash = lineage.get(ext);
    if (hash === undefined) return;
    lineage.delete(ext);
    const n = this.owners.get(hash)! - 1;
    if (n === 0) this.owners.delete(hash);
    else this.owners.set(hash, n);
  }
}

/**
 * Why `replica` does not hold exactly `hashes` (each in one of its two buckets, and no other
 * occupied slot), or undefined when it does.
 */
export function imageMismatch(replica: PoolReplica | undefined, hashes: readonly bigint[]): string | undefined {
  const words = replica?.words;
  if (!replica || !words) return 'no installed replica';
  let missing = 0;
  for (const h of hashes) {
    const p = ckfPrepare(h, replica.bucketCount, replica.seed);
    if (!bucketContains(words[p.bucketA], p.fingerprint) && !bucketContains(words[p.bucketB], p.fingerprint)) missing += 1;
  }
  const filled = replica.stats().filledSlots;
  if (missing === 0 && filled === hashes.length) return undefined;
  return `${missing} of ${hashes.length} model blocks missing, ${filled} slots filled`;
}
