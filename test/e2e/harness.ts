// End-to-end harness: a relay started as `serve` starts it (real config file in a temp dir),
// simulated vLLM engines over ZMQ on loopback, and a RelayClient consumer over gRPC. Expected
// filter contents are computed here from the spec (hashing-ckf-cbi1.md §1.2, §1.3, §1.5) with
// nothing but the XXH3 primitive, and probed in the consumer's replica words with the CKF addressing.
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { RelayClient } from '../../src/client';
import { startRelay, type RunningRelay } from '../../src/server';
import { silentLogger } from '../../src/log';
import { bucketContains, ckfPrepare, xxh3, XXH3_SEED } from '../../src/native';
import { SimulatedEngine, type SimulatedEngineOptions } from '../../src/sim';
import { loggedAddress, spawnCli } from '../support/cli-process';
import { BS } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

export { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
export const DEADLINE_MS = 10_000;
/** A relay process's start (node, the addon, the config) took over 10 s on a loaded 2-core CI box. */
const PROCESS_START_MS = 40_000;
const U64 = (1n << 64n) - 1n;

// --- expected hashes, from the spec ---

/** compute_salt_hash(None, lora): 1337 + xxh3(lora, 0) mod 2^64; "" and absent mean no salt. */
export function loraSeed(lora?: string): bigint {
  return lora ? (XXH3_SEED + xxh3(Buffer.from(lora, 'utf8'), 0n)) & U64 : XXH3_SEED;
}

/**
 * Canonical sequence hashes of the complete blocks of `tokens`, chained from `parent` (the canonical
 * hash of the block before them) when given. Standard windows are `bs` tokens; Eagle windows are
 * `bs + 1` tokens with stride `bs` (hashing-ckf-cbi1.md §1.3).
 */
export function expectedHashes(tokens: readonly number[], lora?: string | null, bs = BS, parent?: bigint, eagle = false): bigint[] {
  const seed = loraSeed(lora ?? undefined);
  const window = eagle ? bs + 1 : bs;
  const out: bigint[] = [];
  let previous = parent;
  for (let start = 0; start + window <= tokens.length; start += bs) {
    const bytes = Buffer.alloc(4 * window);
    for (let i = 0; i < window; i++) bytes.writeUInt32LE(tokens[start + i], 4 * i);
    const block = xxh3(bytes, seed);
    if (previous === undefined) {
      previous = block;
    } else {
      const pair = Buffer.alloc(16);
      pair.writeBigUInt64LE(previous, 0);
      pair.writeBigUInt64LE(block, 8);
      previous = xxh3(pair, XXH3_SEED);
    }
    out.push(previous);
  }
  return out;
}

/** `n` distinct token ids starting at `from`. */
export function tokenRange(from: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => from + i);
}

// --- one scenario's parts, closed together ---

export class E2e {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-e2e-'));
  readonly file = path.join(this.dir, 'relay.json');
  private readonly engines: SimulatedEngine[] = [];
  private relayValue: RunningRelay | undefined;
  private clientValue: RelayClient | undefined;
  private child: ChildProcess | undefined;
  private metricsAddress: string | undefined;
  private addressValue: string | undefined;

  async engine(options: SimulatedEngineOptions = {}): Promise<SimulatedEngine> {
    const engine = new SimulatedEngine({ modelName: 'llama', ...options });
    this.engines.push(engine);
    return engine.start();
  }

  /**
   * Writes the config, starts the relay in-process and a consumer, and waits until the relay
   * subscribed to `subscribed` (default: every engine).
   */
  async start(config: Record<string, unknown>, subscribed: SimulatedEngine[] = this.engines): Promise<RunningRelay> {
    fs.writeFileSync(this.file, JSON.stringify(config));
    this.relayValue = await startRelay({ configFile: this.file, logger: silentLogger });
    await this.connect(this.relayValue.address, this.relayValue.metricsAddress, subscribed);
    return this.relayValue;
  }

  /** Like start(), with the relay as a `kv-dc-relay serve` process. */
  async startProcess(config: Record<string, unknown>, listenTimeoutMs = PROCESS_START_MS): Promise<ChildProcess> {
    fs.writeFileSync(this.file, JSON.stringify(config));
    const child = spawnCli(['serve', '--config', this.file], ['ignore', 'ignore', 'pipe']);
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    await waitFor(() => child.exitCode !== null || loggedAddress(stderr, 'metrics listening') !== undefined, 'the relay process to listen', listenTimeoutMs, 20);
    if (child.exitCode !== null) throw new Error(`relay exited ${child.exitCode}: ${stderr}`);
    await this.connect(loggedAddress(stderr, 'listening')!, loggedAddress(stderr, 'metrics listening'), this.engines);
    return child;
  }

  private async connect(address: string, metricsAddress: string | undefined, subscribed: SimulatedEngine[]): Promise<void> {
    this.metricsAddress = metricsAddress;
    this.addressValue = address;
    this.clientValue = new RelayClient(address, { subscriberId: 'e2e', backoff: { initialMs: 20, maxMs: 200 } });
    this.clientValue.start();
    await Promise.all(subscribed.map((e) => e.waitForSubscribers()));
  }

  /** Replaces the config file atomically (the watch sees a rename). */
  rewrite(config: Record<string, unknown>): void {
    const tmp = path.join(this.dir, '.relay.json.tmp');
    fs.writeFileSync(tmp, JSON.stringify(config));
    fs.renameSync(tmp, this.file);
  }

  get relay(): RunningRelay {
    if (!this.relayValue) throw new Error('relay not started');
    return this.relayValue;
  }

  /** The relay's gRPC address (in-process or process). */
  get address(): string {
    if (!this.addressValue) throw new Error('relay not started');
    return this.addressValue;
  }

  get client(): RelayClient {
    if (!this.clientValue) throw new Error('relay not started');
    return this.clientValue;
  }

  /** The pool key of the catalog pool serving `component`, once the consumer's replica is installed. */
  async poolKey(component = 'backend'): Promise<string> {
    let key: string | undefined;
    await waitFor(() => {
      key = this.client.catalog()?.pools.find((p) => p.descriptor.servingEndpoint?.component === component)?.poolKey;
      return key !== undefined && this.client.replica(key) !== undefined;
    }, `an installed replica of the ${component} pool`, DEADLINE_MS);
    return key!;
  }

  /** Probes the consumer's replica words for `hash` (hashing-ckf-cbi1.md §2.2, §2.6). */
  holds(poolKey: string, hash: bigint): boolean {
    const replica = this.client.replica(poolKey);
    const words = replica?.words;
    if (!replica || !words) return false;
    const p = ckfPrepare(hash, replica.bucketCount, replica.seed);
    return bucketContains(words[p.bucketA], p.fingerprint) || bucketContains(words[p.bucketB], p.fingerprint);
  }

  async awaitHeld(poolKey: string, hashes: readonly bigint[], what: string): Promise<void> {
    await waitFor(() => hashes.every((h) => this.holds(poolKey, h)), what, DEADLINE_MS);
  }

  async awaitGone(poolKey: string, hashes: readonly bigint[], what: string): Promise<void> {
    // Absent from an installed replica; a missing replica proves nothing.
    await waitFor(() => this.client.replica(poolKey) !== undefined && hashes.every((h) => !this.holds(poolKey, h)), what, DEADLINE_MS);
  }

  /** Matched prefix depth of `tokens` on the model's single pool, through the client's query path. */
  depth(model: string, tokens: readonly number[], lora?: string): number | null | undefined {
    const r = this.client.query({ model, tokens, lora });
    return r.kind === 'ok' ? r.pools[0]?.matchedBlocks : undefined;
  }

  async metricsText(): Promise<string> {
    return (await fetch(`http://${this.metricsAddress}/metrics`)).text();
  }

  async close(): Promise<void> {
    this.clientValue?.close();
    await this.relayValue?.shutdown();
    if (this.child && this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child!.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    // A test may already have stopped an engine (a restart); stopping again must not mask its result.
    await Promise.allSettled(this.engines.map((e) => e.stop()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `promise`, or a rejection naming `what` once the deadline passes. */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The value of one Prometheus series (`labels` as printed, "" for none); throws when it is absent. */
export function metricValue(text: string, name: string, labels: string): number {
  const series = labels === '' ? `${name} ` : `${name}{${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(series));
  if (line === undefined) throw new Error(`no series ${series.trim()} in /metrics`);
  return Number(line.slice(series.length));
}
