// A pool whose tables are reserved at construction (limits.reservePoolBlocks, native Reservation):
// filling it to the reservation grows no table, it answers exactly as a pool whose tables grow, its
// state bytes count the reservation from the start, new sources reserve from a bounded budget, and
// the binding refuses bad reservations with a JS error. The sources a reservation names get their
// tables at construction; the process's pool-state bytes (poolStateMemory) follow every state from
// construction to close.
import { PoolEventBatch, PoolFilterState, poolStateMemory, resetPoolStatePeak, type PoolReservation } from '../../src/native';
import { relayAddon } from '../../src/native/addon';
import { expectThrows } from './hashing.helpers';
import { execFile } from 'child_process';
import * as path from 'path';
import { promisify } from 'util';
import { Worker } from 'worker_threads';
import { waitFor } from '../support/waitFor';

const SEED = 0x5deece66d1b54a33n;
const BUCKETS = 1 << 17;

/**
 * A deterministic engine-like stream over `sources` sources: 16-block stores, half continuing the
 * source's previous chain (parent), a third of them sharing token hashes with another source (owner
 * counts above 1, hashes already resident), and 20 % of events removing an earlier store's blocks.
 * About `blocks` blocks stored in all, in batches of 128 events.
 */
function* engineStream(blocks: number, sources: number): Generator<PoolEventBatch> {
  let rng = 0x9e3779b97f4a7c15n;
  const next = (): bigint => {
    rng = (rng * 6364136223846793005n + 1442695040888963407n) & 0xffff_ffff_ffff_ffffn;
    return rng >> 11n;
  };
  let id = 1n;
  const last = new Map<number, bigint>();
  const stored: { source: number; ids: bigint[] }[] = [];
  const tokens: bigint[][] = [];
  let done = 0;
  while (done < blocks) {
    const batch = new PoolEventBatch();
    for (let e = 0; e < 128 && done < blocks; e++) {
      const source = Number(next() % BigInt(sources));
      const worker = BigInt(1 + source);
      if (stored.length > 8 && next() % 5n === 0n) {
        const at = Number(next() % BigInt(stored.length));
        const victim = stored[at];
        stored[at] = stored[stored.length - 1];
        stored.pop();
        batch.addRemoved(BigInt(1 + victim.source), 0, victim.ids);
        if (last.get(victim.source) === victim.ids[15]) last.delete(victim.source);
        continue;
      }
      const ids = Array.from({ length: 16 }, () => id++);
      const shared = tokens.length > 0 && next() % 3n === 0n;
      const hashes = shared ? tokens[Number(next() % BigInt(tokens.length))] : Array.from({ length: 16 }, () => next());
      const parent = next() % 2n === 0n ? last.get(source) ?? null : null;
      batch.addStored(worker, 0, shared ? null : parent, null, ids, hashes);
      if (!shared) tokens.push(hashes);
      stored.push({ source, ids });
      last.set(source, ids[15]);
      done += 16;
    }
    yield batch;
  }
}

/** Applies the stream to both pools; every batch's outcomes and drained window must be equal. */
async function applyBoth(a: PoolFilterState, b: PoolFilterState, blocks: number, sources: number): Promise<void> {
  for (const batch of engineStream(blocks, sources)) {
    const ra = await a.applyAsync(batch);
    const rb = await b.applyAsync(batch);
    expect(ra.outcomes).toEqual(rb.outcomes);
    expect(ra.trackedBlocks).toBe(rb.trackedBlocks);
    expect(a.drain()).toEqual(b.drain());
  }
}

function pool(reserve?: PoolReservation, maxTrackedBlocks?: number): PoolFilterState {
  return new PoolFilterState({ bucketCount: BUCKETS, seed: SEED, reserve, maxTrackedBlocks });
}

describe('reserved pool tables', () => {
  test('a pool reserved for what it stores grows no table while it fills, and answers as a growing pool does', async () => {
    const blocks = 200_000;
    const sources = 4;
    const reserved = pool({ blocks, perSource: blocks / sources });
    const growing = pool();
    await applyBoth(reserved, growing, blocks, sources);
    const stats = reserved.stats();
    expect(stats).toEqual(growing.stats());
    expect(stats.sourceCount).toBe(sources);
    expect(stats.lineageEntries).toBeGreaterThan(0.6 * blocks);
    expect(stats.ownedHashes).toBeGreaterThan(0.4 * blocks);
    expect(reserved.words()).toEqual(growing.words());
    // The growing pool's tables grew and moved entries; the reserved pool's did neither.
    const grew = growing.tableStats();
    expect(grew.ownerGrowths).toBeGreaterThan(5);
    expect(grew.lineageGrowths).toBeGreaterThan(5 * sources);
    expect(grew.ownerMigrated + grew.lineageMigrated).toBeGreaterThan(blocks);
    expect(reserved.tableStats()).toEqual({ ownerGrowths: 0, ownerMigrated: 0, lineageGrowths: 0, lineageMigrated: 0, reservedLineageLeft: 0 });
    reserved.close();
    growing.close();
  });

  test('past its reservation a pool grows as any other, with the same answers', async () => {
    const reserved = pool({ blocks: 20_000, perSource: 10_000 });
    const growing = pool();
    await applyBoth(reserved, growing, 120_000, 2);
    expect(reserved.stats()).toEqual(growing.stats());
    expect(reserved.words()).toEqual(growing.words());
    const t = reserved.tableStats();
    expect(t.ownerGrowths).toBeGreaterThan(0);
    expect(t.lineageGrowths).toBeGreaterThan(0);
    // Fewer than the growing pool's: the first growths (the small tables) never happened.
    expect(t.ownerGrowths).toBeLessThan(growing.tableStats().ownerGrowths);
  });

  test('the state bytes count the reservation from construction on, and each source its share when it appears', () => {
    const blocks = 100_000;
    const empty = pool().stateBytes();
    const reserved = pool({ blocks, perSource: blocks / 2 });
    // The owner table: 64-byte buckets of 5 slots at load 0.66, ~19.4 B per reserved block.
    const owner = reserved.stateBytes() - empty;
    expect(owner).toBeGreaterThanOrEqual(19 * blocks);
    expect(owner).toBeLessThan(21 * blocks);
    // Applies report the same bytes (the pool's state-bytes gauge).
    const first = reserved.apply(new PoolEventBatch().addStored(1n, 0, null, null, [1n], [11n]));
    const second = reserved.apply(new PoolEventBatch().addStored(2n, 0, null, null, [2n], [12n]));
    expect(second.stateBytes).toBe(reserved.stateBytes());
    // Each lineage table: buckets of 4 slots at load 0.66 (~24.2 B per entry), up to 29 % more where
    // its growth phase staggers it (StaggerOf).
    for (const lineage of [first.stateBytes - empty - owner, second.stateBytes - first.stateBytes]) {
      expect(lineage).toBeGreaterThanOrEqual(24 * (blocks / 2));
      expect(lineage).toBeLessThan(32 * (blocks / 2));
    }
    // ~45-51 B per reserved block in all.
    expect(second.stateBytes - empty).toBeGreaterThan(43 * blocks);
    expect(second.stateBytes - empty).toBeLessThan(53 * blocks);
    reserved.close();
  });

  test('sources reserve from a budget of the reserved blocks; a source dropped gives its share back', () => {
    const p = pool({ blocks: 10_000, perSource: 4_000 });
    const store = (worker: bigint, id: bigint) => expect(p.store(worker, 0, null, null, [id], [id * 7n])).toBeNull();
    expect(p.tableStats().reservedLineageLeft).toBe(10_000);
    store(1n, 1n);
    expect(p.tableStats().reservedLineageLeft).toBe(6_000);
    store(2n, 2n);
    store(3n, 3n);
    // The third took what was left; a fourth (a source the deployment did not name) reserves nothing.
    expect(p.tableStats().reservedLineageLeft).toBe(0);
    const before = p.stateBytes();
    store(4n, 4n);
    expect(p.stateBytes() - before).toBeLessThan(4096);
    expect(p.clear(1n, 0)).toBeNull();
    expect(p.stats().sourceCount).toBe(3);
    expect(p.tableStats().reservedLineageLeft).toBe(4_000);
  });

  test('the sources a reservation names have their lineage tables from construction; their first stores map nothing', async () => {
    const blocks = 100_000;
    const sources = [1n, 2n].map((workerId) => ({ workerId, dpRank: 0 }));
    const named = pool({ blocks, perSource: blocks / 2, sources });
    const unnamed = pool({ blocks, perSource: blocks / 2 });
    // Both tables now: a share of the budget each, counted in the state bytes, listed as sources.
    expect(named.tableStats().reservedLineageLeft).toBe(0);
    expect(named.stats().sourceCount).toBe(2);
    expect(named.stateBytes() - unnamed.stateBytes()).toBeGreaterThanOrEqual(2 * 24 * (blocks / 2));
    const growing = pool();
    const before = named.stateBytes();
    for (const p of [named, growing]) {
      expect(p.store(1n, 0, null, null, [1n << 40n], [11n])).toBeNull();
      expect(p.store(2n, 0, null, null, [2n << 40n], [12n])).toBeNull();
    }
    // A few bytes at most (stash vectors), where an unnamed source's first store added its table.
    expect(named.stateBytes() - before).toBeLessThan(4096);
    // The same answers as a pool whose tables grow, and no table grew.
    await applyBoth(named, growing, 60_000, 2);
    expect(named.stats()).toEqual(growing.stats());
    expect(named.words()).toEqual(growing.words());
    expect(named.tableStats()).toMatchObject({ ownerGrowths: 0, lineageGrowths: 0 });
    // A named source emptied is dropped as any other, its share back in the budget.
    expect(named.clear(1n, 0)).toBeNull();
    expect(named.tableStats().reservedLineageLeft).toBe(blocks / 2);
    for (const p of [named, unnamed, growing]) p.close();
  });

  test('a reservation\'s tables are populated in the background after construction; a pool without one is at once', async () => {
    const reserved = pool({ blocks: 1 << 21, perSource: 1 << 21, sources: [{ workerId: 1n, dpRank: 0 }] });
    // ~100 MiB to fault in: not within the microseconds since construction.
    expect(reserved.tablesPopulated()).toBe(false);
    await waitFor(() => reserved.tablesPopulated(), 'the reservation populated', 30_000, 20);
    expect(pool().tablesPopulated()).toBe(true);
    reserved.close();
  });

  test('poolStateMemory counts every state from construction to close, with the most held at once', () => {
    const blocks = 200_000;
    const start = poolStateMemory().liveBytes;
    resetPoolStatePeak();
    expect(poolStateMemory().peakBytes).toBe(start);
    const a = pool({ blocks, perSource: blocks });
    const one = a.stateBytes();
    expect(poolStateMemory().liveBytes).toBe(start + one);
    // An apply that adds a lineage table reports its bytes too.
    const grown = a.apply(new PoolEventBatch().addStored(1n, 0, null, null, [1n], [11n])).stateBytes;
    expect(poolStateMemory().liveBytes).toBe(start + grown);
    a.close();
    expect(poolStateMemory().liveBytes).toBe(start);
    // Two at once show in the peak; one after the other does not.
    resetPoolStatePeak();
    pool({ blocks, perSource: blocks }).close();
    pool({ blocks, perSource: blocks }).close();
    expect(poolStateMemory().peakBytes).toBe(start + one);
    const b = pool({ blocks, perSource: blocks });
    const c = pool({ blocks, perSource: blocks });
    expect(poolStateMemory().peakBytes).toBe(start + 2 * one);
    b.close();
    c.close();
    expect(poolStateMemory().liveBytes).toBe(start);
    expectThrows(() => (poolStateMemory as (x: number) => unknown)(1), 'TypeError');
  });

  test('release() unmaps the tables off the calling thread: poolStateMemory counts them until it settled, not after', async () => {
    const blocks = 1 << 22;
    const p = pool({ blocks, perSource: blocks, sources: [{ workerId: 1n, dpRank: 0 }] });
    await waitFor(() => p.tablesPopulated(), 'the reservation populated', 60_000, 20);
    const bytes = p.stateBytes();
    // Other tests' states may be garbage-collected meanwhile (a few MiB): only this one's ~200 MiB are
    // told apart. Pending releases are held and counted in pool-release.test.ts (the testing addon).
    const before = poolStateMemory().liveBytes;
    let settled = false;
    const released = p.release().then(() => (settled = true));
    // Settled on this thread's loop, never in the call.
    expect(settled).toBe(false);
    expectThrows(() => p.stateBytes(), 'Error', 'PoolClosed');
    await released;
    expect(before - poolStateMemory().liveBytes).toBeGreaterThanOrEqual(bytes);
    // Released already: nothing left to free.
    await expect(p.release()).resolves.toBeUndefined();
  });

  test('release() of a reservation still being populated takes its tables back from the populating thread and unmaps them itself', async () => {
    const blocks = 1 << 22;
    const reserve = { blocks, perSource: blocks, sources: [{ workerId: 1n, dpRank: 0 }] };
    // Queued behind the first pool's population, then under way: each settles once its tables are out.
    const first = pool(reserve);
    const second = pool(reserve);
    const before = poolStateMemory().liveBytes;
    const bytes = first.stateBytes() + second.stateBytes();
    await Promise.all([second.release(), first.release()]);
    expect(before - poolStateMemory().liveBytes).toBeGreaterThanOrEqual(bytes);
    // The thread goes on with whatever else it is given.
    const third = pool({ blocks: 1 << 20, perSource: 1 << 20 });
    await waitFor(() => third.tablesPopulated(), 'a later reservation populated', 60_000, 20);
    await third.release();
  });

  test.each(['exits', 'is terminated'])('a thread that %s with a release in flight ends cleanly, and the release still frees the tables', async (how) => {
    const before = poolStateMemory().liveBytes;
    // The thread's environment tears down with the release queued or under way on the releaser's
    // thread, or done there with its promise still to settle (the terminated thread spins until it is
    // stopped): the teardown waits for the release, its promise no longer settles, and nothing crashes.
    const native = path.resolve(__dirname, '..', '..', 'src', 'native');
    const hook = path.resolve(__dirname, '..', '..', 'scripts', 'ts-hook.js');
    const code = `
      require(${JSON.stringify(hook)});
      const { PoolFilterState } = require(${JSON.stringify(native)});
      const { parentPort } = require('worker_threads');
      const p = new PoolFilterState({ bucketCount: 1024, reserve: { blocks: 1 << 22, perSource: 1 << 22 } });
      const wait = () => (p.tablesPopulated() ? done() : setTimeout(wait, 5));
      const done = () => { parentPort.postMessage(p.stateBytes()); void p.release(); ${how === 'exits' ? 'process.exit(0);' : 'for (;;);'} };
      wait();`;
    const worker = new Worker(code, { eval: true });
    const bytes = await new Promise<number>((resolve) => worker.once('message', resolve));
    expect(bytes).toBeGreaterThan(64 << 20);
    if (how === 'is terminated') void worker.terminate();
    const code_ = await new Promise<number>((resolve) => worker.once('exit', resolve));
    expect(code_).toBe(how === 'exits' ? 0 : 1);
    expect(poolStateMemory().liveBytes).toBeLessThanOrEqual(before);
  });

  test('a process that exits with a release in flight exits cleanly', async () => {
    const native = path.resolve(__dirname, '..', '..', 'src', 'native');
    const hook = path.resolve(__dirname, '..', '..', 'scripts', 'ts-hook.js');
    const code = `
      const { PoolFilterState } = require(${JSON.stringify(native)});
      const p = new PoolFilterState({ bucketCount: 1024, reserve: { blocks: 1 << 22, perSource: 1 << 22 } });
      const wait = () => (p.tablesPopulated() ? done() : setTimeout(wait, 5));
      const done = () => { void p.release(); process.stdout.write('released'); process.exit(0); };
      wait();`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', hook, '-e', code]);
    expect(stdout).toBe('released');
  });

  test('the binding refuses bad reservations with a JS error and builds nothing', () => {
    expectThrows(() => pool({ blocks: -1, perSource: 0 }), 'RangeError');
    expectThrows(() => pool({ blocks: 1.5, perSource: 0 }), 'RangeError');
    expectThrows(() => pool({ blocks: Number.NaN, perSource: 0 }), 'RangeError');
    // Above the native bound (2^26), and above what the pool may track.
    expectThrows(() => pool({ blocks: 2 ** 26 + 1, perSource: 0 }), 'RangeError');
    expectThrows(() => pool({ blocks: 1_001, perSource: 1 }, 1_000), 'RangeError');
    // A source's share cannot pass the reservation.
    expectThrows(() => pool({ blocks: 100, perSource: 101 }), 'RangeError');
    expectThrows(() => pool({ blocks: '100' as unknown as number, perSource: 1 }), 'TypeError');
    expectThrows(() => pool({ blocks: 100n as unknown as number, perSource: 1 }), 'TypeError');
    // The raw addon: a reservation needs its per-source share; named sources come as two arrays of one length.
    const addon = relayAddon();
    expectThrows(() => new addon.PoolFilterState(BUCKETS, SEED, 500, undefined, 100), 'TypeError');
    expectThrows(() => new addon.PoolFilterState(BUCKETS, SEED, 500, undefined, 100, 50, BigUint64Array.of(1n, 2n), Uint32Array.of(0)), 'RangeError');
    expectThrows(() => new addon.PoolFilterState(BUCKETS, SEED, 500, undefined, 100, 50, BigUint64Array.of(1n)), 'TypeError');
    expectThrows(() => new addon.PoolFilterState(BUCKETS, SEED, 500, undefined, 100, 50, [1n] as unknown as BigUint64Array, Uint32Array.of(0)), 'TypeError');
    expectThrows(() => new addon.PoolFilterState(BUCKETS, SEED, 500, undefined, 100, 50, new BigUint64Array(65_537), new Uint32Array(65_537)), 'RangeError');
    // At the bounds it is accepted (mapped lazily: no memory is touched on this thread).
    expect(pool({ blocks: 1_000, perSource: 1_000 }, 1_000).tableStats().reservedLineageLeft).toBe(1_000);
    expect(pool({ blocks: 0, perSource: 0 }).stateBytes()).toBe(pool().stateBytes());
  });
});
