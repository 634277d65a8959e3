// The test/bench addon (native/testing/, build/Release/kv_dc_relay_testing.node): vector-only and
// bench-only entry points that the production addon does not export. Loaded only by test/ and bench/.
import { nativeTarget, packageRoot } from '../../src/native/addon';
import { DEFAULT_CKF_MAX_KICKS, DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { XXH3_SEED, type HashBatchOptions, type PoolStats, type PromptBatch } from '../../src/native';
import type { RelayAddon } from '../../binding';

export interface RawCanonicalResult {
  outcome: string;
  owners: number;
  kicks: number;
  rngDraws: number;
  changedBuckets: Uint32Array;
  changedWords: BigUint64Array;
  rngState: bigint;
}

export interface NativeChurnBench {
  ops: number;
  seconds: number;
  opsPerSecond: number;
  /** Median over batches: robust to preemption on a shared machine. */
  medianBatchOpsPerSecond: number;
  finalLoad: number;
  capacityFailures: number;
}

/**
 * A pool filter state driven by raw canonical-hash ops with owner counting (no lineage), with the
 * per-op write lists and RNG state of ckf_operations.json.
 */
export interface CanonicalPool {
  /** One owner more, inserting if not resident. */
  insertCanonical(hash: bigint): RawCanonicalResult;
  /** One owner less; the fingerprint goes with the last owner of a resident hash. */
  removeCanonical(hash: bigint): RawCanonicalResult;
  /** Relocation-free retry of an owned, non-resident hash (no owner change). */
  reofferCanonical(hash: bigint): RawCanonicalResult;
  /** insertCanonical (ops[i] = 0) / removeCanonical (1) in one planned call; outcomes index outcomeNames. */
  applyCanonicalBatch(ops: Uint8Array, hashes: BigUint64Array): { outcomes: Uint8Array; outcomeNames: string[] };
  contains(hash: bigint): boolean;
  owners(hash: bigint): number;
  isResident(hash: bigint): boolean;
  drain(): { buckets: Uint32Array; values: BigUint64Array } | null;
  stats(): PoolStats;
  words(): BigUint64Array;
}

export interface NativeMemoryBench {
  blocks: number;
  /** Process RSS growth while the state was filled (tables still draining or prepared included). */
  rssBytes: number;
  /** The state's own accounting of its tables at the end of the fill. */
  accountedBytes: number;
  /** Drained tables' huge pages the populating thread kept at the end of the fill (native/core/warm_pages.h). */
  keptBytes: number;
  /** How long after SettleTables the last kept page was unmapped (its hold ended). */
  keptForMs: number;
  /** Both again at rest: every drain finished, prepared successor dropped (SettleTables), kept pages unmapped. */
  restRssBytes: number;
  restAccountedBytes: number;
  /** The most either reached after any slice of the fill. */
  peakRssBytes: number;
  peakAccountedBytes: number;
  /** RSS growth of a plain array of the input words (ext id + tokens hash per block). */
  baselineRssBytes: number;
  lineageEntries: number;
  ownedHashes: number;
  residentCount: number;
  bucketCount: number;
  /** Slices of 4096 blocks applied (each timed with its drain), and their times. */
  slices: number;
  maxSliceMs: number;
  /** Blocks stored when the slowest slice ended. */
  maxSliceAtBlocks: number;
  p999SliceMs: number;
  p99SliceMs: number;
  medianSliceMs: number;
  totalMs: number;
}

/** What checkBucketMap's run exercised (it throws at the first difference from std::unordered_map). */
export interface BucketMapCheck {
  maxSize: number;
  maxStash: number;
  /** Migrations to a bigger table. */
  growths: number;
  /** Migrations to a table under another seed (a stash at its limit). */
  reseeds: number;
  /** Synchronous rebuilds under another seed (a stash at its limit while a table drained). */
  rebuilds: number;
  /** Drains finished at once (a Reserve past the room a drain leaves). */
  finishes: number;
  /** Entries the drains moved. */
  migrated: number;
  /** Operations run while a table drained. */
  migratingOps: number;
  /** Full checks (contents, invariants) taken while a table drained. */
  migratingChecks: number;
  /** Operations on keys still in the draining table, and on keys in the new one, during drains. */
  oldHits: number;
  newHits: number;
  secondBucket: number;
  paths: number;
  pathMoves: number;
}

/** A map grown from empty by random insertions (one erasure per 8): the most entries one operation moved. */
export interface BucketMapGrowth {
  size: number;
  erased: number;
  growths: number;
  migrated: number;
  finishes: number;
  rebuilds: number;
  maxOpMoves: number;
  /** The bound the map promises for one operation (drain steps with their paths, and the key's own path). */
  maxMovesPerOp: number;
}

/** The load a mapped table moved to its successor at: with the successor's pages not in yet, and in. */
export interface BucketMapSuccessorLoads {
  held: number;
  populated: number;
}

/** PoolFilterState's incremental MemoryBytes checked against a full recount after every operation. */
export interface PoolMemoryAccounting {
  checks: number;
  clears: number;
  maxBytes: number;
  sourceCount: number;
}

interface TestingBinding {
  CanonicalPool: new (bucketCount: number, seed: bigint, maxKicks: number) => CanonicalPool;
  laneRngSeed(seed: bigint, lane: number | bigint): bigint;
  splitmixNext(state: bigint): { value: bigint; state: bigint };
  benchPoolNative(bucketCount: number, blocksPerPrompt: number, minLoad: number, maxLoad: number, minOps: number): NativeChurnBench;
  benchPoolCanonicalNative(bucketCount: number, minLoad: number, maxLoad: number, minOps: number): NativeChurnBench;
  benchPoolMemoryNative(sources: number, blocks: number): NativeMemoryBench;
  checkBucketMap(seed: bigint, operations: number, keySpace: number, valueBytes: 4 | 8): BucketMapCheck;
  checkBucketMapGrowth(valueBytes: 4 | 8, entries: number): BucketMapGrowth;
  checkPoolMemoryAccounting(sources: number, operations: number): PoolMemoryAccounting;
  checkBucketMapWaitsForSuccessor(valueBytes: 4 | 8): BucketMapSuccessorLoads;
  checkBucketMapStagger(maps: number, entries: number, staggered: boolean): BucketMapStagger;
  attackBucketMap(fill: number, batches: number, perBatch: number): BucketMapAttack;
  checkLineageStagger(sources: number, blocksPerSource: number): number[];
  checkChainPlanning(chains: number, eventsPerChain: number, blocksPerEvent: number): ChainPlanning;
  checkPopulatorPause(): { whilePaused: boolean; afterResume: boolean };
  checkPopulatorResult(): PopulatorResult;
  checkUnmapOnCaller(): { orphanedMapped: boolean; queuedUnmapped: boolean; underWayUnmapped: boolean };
  checkWarmPagesReuse(): WarmPagesReuse;
  checkWarmPagesInUse(): WarmPagesInUse;
  benchPopulatorContention(mib: number): PopulatorContention;
  benchWarmPages(mib: number): WarmPagesBench;
  populatorCounts(): PopulatorCounts;
  /** The pool binding compiled into this addon, whose releaser holdPoolReleases reaches (its own accounting too). */
  releasePool: Pick<RelayAddon, 'PoolFilterState' | 'poolStateMemory' | 'resetPoolStatePeak'>;
  /** While held, the releaser frees nothing: releases made meanwhile wait for it. */
  holdPoolReleases(held: boolean): void;
  /** Releases whose environment tears down and waits for the releaser to free their state. */
  poolReleasesHoldingTeardown(): number;
  xxh3BlocksBaseline(
    tokens: Uint32Array,
    promptOffsets: Uint32Array,
    kvBlockSize: number,
    eagle: boolean,
    seed: bigint,
    sequence: boolean,
  ): bigint;
}

const root = packageRoot();
export const testingAddon = require(nativeTarget(root).testingBuildPath(root)) as TestingBinding;

export function canonicalPool(opts: { bucketCount: number; seed?: bigint; maxKicks?: number }): CanonicalPool {
  return new testingAddon.CanonicalPool(opts.bucketCount, opts.seed ?? DEFAULT_CKF_SEED, opts.maxKicks ?? DEFAULT_CKF_MAX_KICKS);
}

/** applyCanonicalBatch over op objects; each op's outcome name. */
export function applyCanonical(pool: CanonicalPool, ops: readonly { op: 'insert' | 'remove'; hash: bigint }[]): string[] {
  const kinds = Uint8Array.from(ops, (o) => (o.op === 'insert' ? 0 : 1));
  const hashes = BigUint64Array.from(ops, (o) => o.hash);
  const { outcomes, outcomeNames } = pool.applyCanonicalBatch(kinds, hashes);
  return Array.from(outcomes, (code) => outcomeNames[code]);
}

/** Initial relocation rng state of a lane: splitmix(seed ^ ((lane + 1) * 0x9E3779B97F4A7C15)). */
export function laneRngSeed(seed: bigint, lane: number | bigint): bigint {
  return testingAddon.laneRngSeed(seed, lane);
}

export function splitmixNext(state: bigint): { value: bigint; state: bigint } {
  return testingAddon.splitmixNext(state);
}

/**
 * Benchmark (blocks the calling thread): prompt churn (stores and last-block-first removals of
 * `blocksPerPrompt`-block prompts) through the native batch apply + drain, load kept in [minLoad, maxLoad].
 */
export function benchPoolChurnNative(
  bucketCount: number,
  blocksPerPrompt: number,
  minLoad: number,
  maxLoad: number,
  minOps: number,
): NativeChurnBench {
  return testingAddon.benchPoolNative(bucketCount, blocksPerPrompt, minLoad, maxLoad, minOps);
}

/**
 * Benchmark (blocks the calling thread): raw canonical-hash churn (owner counting and the filter, no
 * lineage), fresh hashes in and oldest out, load kept in [minLoad, maxLoad].
 */
export function benchPoolCanonicalNative(bucketCount: number, minLoad: number, maxLoad: number, minOps: number): NativeChurnBench {
  return testingAddon.benchPoolCanonicalNative(bucketCount, minLoad, maxLoad, minOps);
}

/**
 * Benchmark (blocks the calling thread): a pool state filled with `blocks` distinct stored blocks over
 * `sources` sources; its RSS growth and own accounting, and the RSS growth of the bare input words.
 */
export function benchPoolMemoryNative(sources: number, blocks: number): NativeMemoryBench {
  return testingAddon.benchPoolMemoryNative(sources, blocks);
}

/**
 * native/core/bucket_map.h against std::unordered_map, with 4-byte values (the owner table) or 8-byte values
 * (the lineage tables): `operations` random operations over `keySpace` keys, with full checks while
 * tables drain, then keys crafted to share their candidate buckets in a fresh map and in one mid-drain.
 * Throws at the first difference or broken invariant; returns what the run exercised.
 */
export function checkBucketMap(seed: bigint, operations: number, keySpace: number, valueBytes: 4 | 8): BucketMapCheck {
  return testingAddon.checkBucketMap(seed, operations, keySpace, valueBytes);
}

/** native/core/bucket_map.h grown from empty to `entries` random keys: the most entries one operation moved. */
export function checkBucketMapGrowth(valueBytes: 4 | 8, entries: number): BucketMapGrowth {
  return testingAddon.checkBucketMapGrowth(valueBytes, entries);
}

/**
 * Stores, removals and clears over `sources` sources of one PoolFilterState (one source growing, the
 * others dropped when cleared); throws where its MemoryBytes differs from a count of every table.
 */
export function checkPoolMemoryAccounting(sources: number, operations: number): PoolMemoryAccounting {
  return testingAddon.checkPoolMemoryAccounting(sources, operations);
}

/** A lineage table under ids crafted against its public addressing, against random ids (attackBucketMap). */
export interface BucketMapAttack {
  /** Time the crafted batches took to insert... */
  craftedNs: number;
  /** ...and as many random ids into a map of the same fill. */
  randomNs: number;
  /** Migrations and synchronous rebuilds under another seed that the crafted ids caused. */
  reseeds: number;
  rebuilds: number;
  /** The most entries the crafted map's stashes held after a batch. */
  maxStash: number;
}

/**
 * HashDoS on native/core/bucket_map.h: a map of `fill` random keys takes `batches` batches of
 * `perBatch` keys, each batch aimed at one bucket pair of its current table as the public code and
 * seed address it (the process secret unknown), then as many random keys into a like map.
 */
export function attackBucketMap(fill: number, batches: number, perBatch: number): BucketMapAttack {
  return testingAddon.attackBucketMap(fill, batches, perBatch);
}

/** native/core/bucket_map.h: when a table moves to its prepared successor, with its pages held back and in. */
export function checkBucketMapWaitsForSuccessor(valueBytes: 4 | 8): BucketMapSuccessorLoads {
  return testingAddon.checkBucketMapWaitsForSuccessor(valueBytes);
}

/** Successors prepared by maps filled in step (checkBucketMapStagger). */
export interface BucketMapStagger {
  /** Successors prepared for tables of kStaggerBuckets or more, over all maps. */
  growths: number;
  /** The most of them prepared within 1/64 of the entries a map held then. */
  maxTogether: number;
}

/** native/core/bucket_map.h: `maps` lineage-like maps filled in step, with growth phases 1..maps or all 0. */
export function checkBucketMapStagger(maps: number, entries: number, staggered: boolean): BucketMapStagger {
  return testingAddon.checkBucketMapStagger(maps, entries, staggered);
}

export interface ChainPlanning {
  unplannedStores: number;
  errors: number;
  lineageEntries: number;
}

/** native/pool/pool_plan.cc: one batch of interleaved chains, each event continuing its chain's previous one. */
export function checkChainPlanning(chains: number, eventsPerChain: number, blocksPerEvent: number): ChainPlanning {
  return testingAddon.checkChainPlanning(chains, eventsPerChain, blocksPerEvent);
}

/** native/pool/pool_filter_state.cc: each source's lineage bucket count after equal round-robin stores. */
export function checkLineageStagger(sources: number, blocksPerSource: number): number[] {
  return testingAddon.checkLineageStagger(sources, blocksPerSource);
}

/** native/core/page_populator.h: a background population waits while the caller changes the address space. */
export function checkPopulatorPause(): { whilePaused: boolean; afterResume: boolean } {
  return testingAddon.checkPopulatorPause();
}

/** native/core/page_populator.h: buffers freed under UnmapOnCaller are unmapped by the caller, their population withdrawn. */
export function checkUnmapOnCaller(): { orphanedMapped: boolean; queuedUnmapped: boolean; underWayUnmapped: boolean } {
  return testingAddon.checkUnmapOnCaller();
}

/** What a background population left in a buffer its owner had half written (checkPopulatorResult). */
export interface PopulatorResult {
  untouchedBytes: number;
  residentGrowth: number;
  writesKept: boolean;
}

/** native/core/page_populator.h: population faults every page in for writing and changes no byte. */
export function checkPopulatorResult(): PopulatorResult {
  return testingAddon.checkPopulatorResult();
}

/** A populated buffer made of a drained one's kept huge pages (checkWarmPagesReuse). */
export interface WarmPagesReuse {
  keptBytes: number;
  leftBytes: number;
  residentGrowth: number;
  populatedBytes: number;
  zeroed: boolean;
  writable: boolean;
  /** How much the resident set fell when the kept pages' hold ended. */
  unmappedAtExpiry: number;
}

/** native/core/warm_pages.h: a drained buffer's huge pages become the next populated buffer's, zeroed. */
export function checkWarmPagesReuse(): WarmPagesReuse {
  return testingAddon.checkWarmPagesReuse();
}

/** A buffer its owner used before the populating thread reached it (checkWarmPagesInUse). */
export interface WarmPagesInUse {
  keptBytes: number;
  leftBytes: number;
  writesKept: boolean;
}

/** native/core/warm_pages.h: no kept page replaces a page of a buffer in use. */
export function checkWarmPagesInUse(): WarmPagesInUse {
  return testingAddon.checkWarmPagesInUse();
}

/** Population of fresh pages against kept ones (benchWarmPages). */
export interface WarmPagesBench {
  freshMs: number;
  keptMs: number;
  /** Huge pages the second population took from WarmPages. */
  replaced: number;
}

export function benchWarmPages(mib: number): WarmPagesBench {
  return testingAddon.benchWarmPages(mib);
}

/** Huge pages the populating thread faulted in fresh, replaced by kept ones, and unmapped unused. */
export interface PopulatorCounts {
  touched: number;
  replaced: number;
  expired: number;
}

export function populatorCounts(): PopulatorCounts {
  return testingAddon.populatorCounts();
}

/** An mmap + write + munmap of 256 KiB, timed. */
export interface MapLatencies {
  maxMs: number;
  meanMs: number;
  count: number;
}

export interface PopulatorContention {
  idle: MapLatencies;
  busy: MapLatencies;
  populateMs: number;
}

/** native/core/page_populator.h: the calling thread's mmap/munmap latency while a fresh `mib` MiB buffer is populated, and idle. */
export function benchPopulatorContention(mib: number): PopulatorContention {
  return testingAddon.benchPopulatorContention(mib);
}

/** Benchmark baseline: raw XXH3 over exactly the windows hashBatch reads (xor of the hashes). */
export function xxh3BlocksBaseline(batch: PromptBatch, opts: HashBatchOptions): bigint {
  return testingAddon.xxh3BlocksBaseline(
    batch.tokens,
    batch.promptOffsets,
    opts.kvBlockSize,
    opts.eagle ?? false,
    opts.seed ?? XXH3_SEED,
    false,
  );
}
