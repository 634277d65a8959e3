// A realistic KV-cache workload for one simulated worker: conversations that share system-prompt
// prefixes and grow turn by turn, each pinned to a data-parallel rank whose cache has a capacity;
// least-recently-used leaf blocks are evicted to make room. Deterministic for a given seed.
import { createHash } from 'node:crypto';
import { Rng } from './rng';
import type { SimEvent } from './encode';

export interface WorkloadOptions {
  seed?: number;
  blockSize?: number;
  /** Cache capacity per rank, in blocks. */
  capacityBlocks?: number;
  systemPrompts?: number;
  systemPromptBlocks?: number;
  /** Conversations alive at once. */
  conversations?: number;
  /** New blocks per turn, inclusive range. */
  turnBlocks?: [number, number];
  /** A conversation ends (and a new one starts) once it is this long. */
  maxConversationBlocks?: number;
  /** LoRA adapter per conversation, picked at random; null = the base model. */
  loraNames?: (string | null)[];
  vocabSize?: number;
}

interface CachedBlock {
  parent: bigint | null;
  children: number;
  lastUse: number;
}

interface Conversation {
  rank: number;
  lora: string | null;
  blocks: number[][]; // token ids per block
  hashes: bigint[]; // engine hash per block, extended as the conversation grows
}

/** An explicit request's prompt as the engine sees it: complete blocks and their chained engine hashes. */
export interface Prompt {
  readonly lora: string | null;
  readonly blocks: readonly (readonly number[])[];
  readonly hashes: readonly bigint[];
}

/** One rank's KV cache: which engine blocks are resident. */
class RankCache {
  /** In least-recently-used order. */
  readonly blocks = new Map<bigint, CachedBlock>();
  constructor(readonly capacity: number) {}

  touch(hash: bigint, now: number): void {
    const block = this.blocks.get(hash)!;
    this.blocks.delete(hash);
    block.lastUse = now;
    this.blocks.set(hash, block);
  }
}

const DEFAULTS: Required<WorkloadOptions> = {
  seed: 1,
  blockSize: 16,
  capacityBlocks: 256,
  systemPrompts: 4,
  systemPromptBlocks: 4,
  conversations: 16,
  turnBlocks: [1, 4],
  maxConversationBlocks: 48,
  loraNames: [null],
  vocabSize: 32_000,
};

export class Workload {
  readonly options: Required<WorkloadOptions>;
  private readonly rng: Rng;
  private readonly caches = new Map<number, RankCache>();
  private readonly systemPrompts: number[][][];
  private readonly conversations: Conversation[] = [];
  private clock = 0;

  constructor(readonly ranks: readonly number[], options: WorkloadOptions = {}) {
    this.options = { ...DEFAULTS, ...stripUndefined(options) };
    const o = this.options;
    if (ranks.length === 0) throw new RangeError('a workload needs at least one rank');
    if (o.capacityBlocks < o.maxConversationBlocks + o.systemPromptBlocks) {
      throw new RangeError('capacityBlocks must hold the longest conversation');
    }
    this.rng = new Rng(o.seed);
    for (const r of ranks) this.caches.set(r, new RankCache(o.capacityBlocks));
    this.systemPrompts = Array.from({ length: o.systemPrompts }, () => this.randomBlocks(o.systemPromptBlocks));
  }

  /** One request: the events each rank publishes for it (in one batch per rank). */
  step(): { rank: number; events: SimEvent[] } {
    const conv = this.pickConversation();
    conv.blocks.push(...this.randomBlocks(this.rng.range(...this.options.turnBlocks)));
    return { rank: conv.rank, events: this.serveConversation(conv) };
  }

  /** Splits `tokens` into complete blocks (a partial tail block is never cached) and hashes their chain. */
  prompt(tokens: ArrayLike<number>, lora: string | null = null): Prompt {
    const { blockSize } = this.options;
    const blocks: number[][] = [];
    const hashes: bigint[] = [];
    for (let start = 0; start + blockSize <= tokens.length; start += blockSize) {
      const block = Array.from({ length: blockSize }, (_, i) => tokens[start + i]);
      hashes.push(blockHash(hashes.length === 0 ? null : hashes[hashes.length - 1], block, lora));
      blocks.push(block);
    }
    return { lora, blocks, hashes };
  }

  /** How many leading blocks of the prompt are resident on the rank. */
  residentPrefix(rank: number, prompt: Prompt): number {
    const cache = this.cache(rank);
    const firstMissing = prompt.hashes.findIndex((h) => !cache.blocks.has(h));
    return firstMissing < 0 ? prompt.hashes.length : firstMissing;
  }

  /** One explicit request on a rank: its resident prefix is reused, the rest stored (see step()). */
  serve(rank: number, prompt: Prompt): { cachedBlocks: number; events: SimEvent[] } {
    const cachedBlocks = this.residentPrefix(rank, prompt);
    return { cachedBlocks, events: this.walk(this.cache(rank), prompt) };
  }

  /** The token ids of one of the shared system prompts (every conversation starts with one). */
  /**
   * A prompt that starts with system prompt 0 and goes on with tokens of its own: its prefix is
   * cached once a conversation on that system prompt was served (the demo's and sim-engine's query).
   */
  sharedPrefixPrompt(): number[] {
    return [...this.systemPromptTokens(0), 1, 2, 3];
  }

  systemPromptTokens(index: number): number[] {
    const prompt = this.systemPrompts[index];
    if (!prompt) throw new RangeError(`no system prompt ${index} (there are ${this.systemPrompts.length})`);
    return prompt.flat();
  }

  /** The engine block hashes resident on a rank. */
  resident(rank: number): bigint[] {
    return [...(this.caches.get(rank)?.blocks.keys() ?? [])];
  }

  usage(rank: number): number {
    const cache = this.caches.get(rank);
    return cache ? cache.blocks.size / cache.capacity : 0;
  }

  /** The engine dropped its cache (AllBlocksCleared / restart). */
  clear(rank: number): void {
    this.caches.get(rank)?.blocks.clear();
  }

  private pickConversation(): Conversation {
    const o = this.options;
    const i = this.rng.int(o.conversations);
    let conv = this.conversations[i];
    if (!conv || conv.blocks.length >= o.maxConversationBlocks) {
      conv = {
        rank: this.rng.pick(this.ranks),
        lora: this.rng.pick(o.loraNames),
        blocks: [...this.rng.pick(this.systemPrompts)],
        hashes: [],
      };
      this.conversations[i] = conv;
    }
    return conv;
  }

  private serveConversation(conv: Conversation): SimEvent[] {
    const hashes = conv.hashes;
    for (let i = hashes.length; i < conv.blocks.length; i++) {
      hashes.push(blockHash(i === 0 ? null : hashes[i - 1], conv.blocks[i], conv.lora));
    }
    return this.walk(this.cache(conv.rank), conv);
  }

  private cache(rank: number): RankCache {
    const cache = this.caches.get(rank);
    if (!cache) throw new RangeError(`rank ${rank} is not one of this workload's ranks`);
    return cache;
  }

  /** Walks a prompt's chain: resident blocks are reused, the rest stored after evictions. */
  private walk(cache: RankCache, { blocks, hashes, lora }: Prompt): SimEvent[] {
    const now = ++this.clock;
    const firstMissing = hashes.findIndex((h) => !cache.blocks.has(h));
    for (const h of hashes.slice(0, firstMissing < 0 ? hashes.length : firstMissing)) cache.touch(h, now);
    if (firstMissing < 0) return [];
    const events: SimEvent[] = [];
    // The reused prefix was just touched, so eviction cannot take it.
    const evicted = this.evict(cache, hashes.length - firstMissing, now);
    if (evicted.length > 0) events.push({ type: 'BlockRemoved', blockHashes: evicted });
    const stored = hashes.slice(firstMissing);
    const parentHash = firstMissing === 0 ? null : hashes[firstMissing - 1];
    stored.forEach((h, i) => {
      cache.blocks.set(h, { parent: i === 0 ? parentHash : stored[i - 1], children: 0, lastUse: now });
    });
    if (parentHash !== null) cache.blocks.get(parentHash)!.children += 1;
    for (let i = 0; i < stored.length - 1; i++) cache.blocks.get(stored[i])!.children += 1;
    events.push({
      type: 'BlockStored',
      blockHashes: stored,
      parentBlockHash: parentHash,
      tokenIds: blocks.slice(firstMissing).flat(),
      blockSize: this.options.blockSize,
      loraName: lora,
    });
    return events;
  }

  /** Frees room for `needed` blocks by evicting least-recently-used leaves not used by this request. */
  private evict(cache: RankCache, needed: number, now: number): bigint[] {
    const evicted: bigint[] = [];
    while (cache.blocks.size + needed > cache.capacity) {
      let victim: bigint | null = null;
      // The map is in least-recently-used order (touch re-inserts), so the first idle leaf is the LRU one.
      for (const [h, b] of cache.blocks) {
        if (b.children === 0 && b.lastUse < now) {
          victim = h;
          break;
        }
      }
      if (victim === null) break;
      const parent = cache.blocks.get(victim)!.parent;
      cache.blocks.delete(victim);
      if (parent !== null) {
        const p = cache.blocks.get(parent);
        if (p) p.children -= 1;
      }
      evicted.push(victim);
    }
    return evicted;
  }

  private randomBlocks(count: number): number[][] {
    const { blockSize, vocabSize } = this.options;
    return Array.from({ length: count }, () => Array.from({ length: blockSize }, () => this.rng.int(vocabSize)));
  }
}

/** vLLM-like engine hash: SHA-256 over (parent, LoRA, tokens), low 64 bits. */
function blockHash(parent: bigint | null, tokens: readonly number[], lora: string | null): bigint {
  const h = createHash('sha256');
  const p = Buffer.alloc(8);
  p.writeBigUInt64BE(parent ?? 0n);
  h.update(p);
  h.update(lora ?? '');
  h.update(Buffer.from(Uint32Array.from(tokens).buffer));
  return h.digest().readBigUInt64BE(24);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
