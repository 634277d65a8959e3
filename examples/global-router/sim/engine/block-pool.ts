// One rank's KV blocks, shared by running requests and the prefix cache as in vLLM's block pool: a
// block is referenced by the requests using it; a full, computed block carries its hash and stays
// in the prefix cache after its last user is gone, evictable in least-recently-freed order until its
// room is needed. Evictions are reported (BlockRemoved) by hash.

export interface Block {
  /** The chain hash of its tokens once it is full and computed; null before (or a duplicate). */
  hash: number | null;
  ref: number;
}

export class BlockPool {
  /** Cached blocks by hash, referenced or not. */
  private readonly cached = new Map<number, Block>();
  /** Cached blocks nobody references, least recently freed first: the eviction order. */
  private readonly evictable = new Map<number, Block>();
  /** Free blocks that hold nothing reusable. */
  private blank: number;
  private removed: number[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('a block pool needs at least one block');
    this.blank = capacity;
  }

  /** Blocks that can be handed out: blank ones and evictable cached ones. */
  get free(): number {
    return this.blank + this.evictable.size;
  }

  /** Blocks referenced by running requests (what vLLM reports as KV-cache usage). */
  get used(): number {
    return this.capacity - this.free;
  }

  get cachedBlocks(): number {
    return this.cached.size;
  }

  has(hash: number): boolean {
    return this.cached.has(hash);
  }

  /** How many leading hashes are cached (the longest reusable prefix). */
  match(hashes: readonly number[], limit = hashes.length): number {
    let n = 0;
    while (n < limit && this.cached.has(hashes[n])) n++;
    return n;
  }

  /** Of the first `n` hashes (all cached), how many are evictable now: taking them uses up free room. */
  evictableAmong(hashes: readonly number[], n: number): number {
    let count = 0;
    for (let i = 0; i < n; i++) if (this.evictable.has(hashes[i])) count++;
    return count;
  }

  /** A reference to a cached block (a prefix hit). */
  acquire(hash: number): Block {
    const block = this.cached.get(hash);
    if (!block) throw new Error(`block ${hash} is not cached`);
    if (block.ref === 0) this.evictable.delete(hash);
    block.ref++;
    return block;
  }

  /** A fresh block: a blank one, else the least recently freed cached one, evicted. */
  allocate(): Block {
    if (this.blank > 0) {
      this.blank--;
      return { hash: null, ref: 1 };
    }
    const oldest = this.evictable.entries().next();
    if (oldest.done) throw new Error('no free KV block');
    const [hash, block] = oldest.value;
    this.evictable.delete(hash);
    this.cached.delete(hash);
    this.removed.push(hash);
    block.hash = null;
    block.ref = 1;
    return block;
  }

  /** Makes a full, computed block reusable; false when an equal block is already cached (it stays private). */
  register(block: Block, hash: number): boolean {
    if (this.cached.has(hash)) return false;
    block.hash = hash;
    this.cached.set(hash, block);
    return true;
  }

  /** Drops one reference; an unreferenced cached block becomes the most recently freed evictable one. */
  release(block: Block): void {
    if (block.ref <= 0) throw new Error('block released more often than acquired');
    block.ref--;
    if (block.ref > 0) return;
    if (block.hash === null) this.blank++;
    else this.evictable.set(block.hash, block);
  }

  /** Hashes evicted since the last call. */
  drainRemoved(): number[] {
    const out = this.removed;
    this.removed = [];
    return out;
  }
}
