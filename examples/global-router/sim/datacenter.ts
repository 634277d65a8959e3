// One simulated datacenter: a vLLM-like engine with `ranksPerDc` data-parallel ranks (one pool) and
// its own relay, started as `kv-dc-relay serve` would start it. A routed request becomes engine work
// here: the DC sends it to the rank with the longest cached prefix, the rank reuses that prefix and
// stores the rest (evicting under capacity), and the relay publishes the change to every router.
//
// Service time is simulated on the run's clock (ms since the run started): per rank max_num_seqs
// slots; prefill costs per uncached token, decode per output token. The engine's /metrics report
// the resulting running/waiting requests and KV usage, which the relay scrapes as pool load.
import * as fs from 'fs';
import * as path from 'path';
import { SimulatedEngine } from 'kv-dc-relay';
import { silentLogger, startRelay, type RunningRelay } from 'kv-dc-relay/server';
import type { ClusterOptions } from './options';
import type { SimRequest } from './workload';

export interface Served {
  dc: string;
  rank: number;
  promptTokens: number;
  /** Prompt tokens the rank already held (complete blocks of the longest resident prefix). */
  cachedTokens: number;
  /** Simulated: when the request got a slot, when its first token came, when it finished (run clock, ms). */
  startMs: number;
  firstTokenMs: number;
  finishMs: number;
}

interface Active {
  startMs: number;
  finishMs: number;
  blocks: number;
}

export const POOL_NAMESPACE = 'prod';

export class Datacenter {
  /** Per rank: when each of its max_num_seqs slots frees up (run clock). */
  private readonly slots: Map<number, number[]>;
  private readonly active = new Map<number, Active[]>();
  private relayValue: RunningRelay | null;

  private constructor(
    readonly name: string,
    readonly engine: SimulatedEngine,
    relay: RunningRelay,
    private readonly cluster: ClusterOptions,
  ) {
    this.relayValue = relay;
    const ranks = Array.from({ length: engine.dpSize }, (_, r) => r);
    this.slots = new Map(ranks.map((r) => [r, new Array<number>(cluster.maxNumSeqs).fill(0)]));
    for (const r of ranks) this.active.set(r, []);
  }

  static async start(name: string, cluster: ClusterOptions, model: string, dir: string): Promise<Datacenter> {
    const engine = new SimulatedEngine({
      dpSize: cluster.ranksPerDc,
      modelName: model,
      // The engine serves routed prompts only; its own generator never runs, so it needs no room.
      workload: { blockSize: cluster.blockSize, capacityBlocks: cluster.capacityBlocks, maxConversationBlocks: 1, systemPromptBlocks: 1 },
    });
    await engine.start();
    const configFile = path.join(dir, `relay-${name}.json`);
    fs.writeFileSync(configFile, JSON.stringify(relayConfig(name, engine, cluster, model)));
    let relay: RunningRelay;
    try {
      relay = await startRelay({ configFile, logger: silentLogger });
      await engine.waitForSubscribers();
    } catch (err) {
      await engine.stop();
      throw err;
    }
    const dc = new Datacenter(name, engine, relay, cluster);
    dc.publishGauges(0);
    return dc;
  }

  get relayAddress(): string {
    if (!this.relayValue) throw new Error(`the relay of ${this.name} is down`);
    return this.relayValue.address;
  }

  get relayUp(): boolean {
    return this.relayValue !== null;
  }

  /** Serves a routed request arriving at `arrivalMs` (run clock). */
  async serve(request: SimRequest, arrivalMs: number): Promise<Served> {
    const { blockSize, prefillMsPerToken, decodeMsPerToken } = this.cluster;
    const prompt = this.engine.workload.prompt(request.tokens);
    const rank = this.pickRank(prompt, arrivalMs);
    const cachedBlocks = await this.engine.serve(rank, prompt);
    const cachedTokens = cachedBlocks * blockSize;
    const slots = this.slots.get(rank)!;
    const slot = slots.indexOf(Math.min(...slots));
    const startMs = Math.max(arrivalMs, slots[slot]);
    const firstTokenMs = startMs + (request.tokens.length - cachedTokens) * prefillMsPerToken;
    const finishMs = firstTokenMs + request.outputTokens * decodeMsPerToken;
    slots[slot] = finishMs;
    this.active.get(rank)!.push({ startMs, finishMs, blocks: Math.ceil((request.tokens.length + request.outputTokens) / blockSize) });
    this.publishGauges(arrivalMs);
    return { dc: this.name, rank, promptTokens: request.tokens.length, cachedTokens, startMs, firstTokenMs, finishMs };
  }

  /** Updates the engine's /metrics to the state at `nowMs` (run clock). */
  publishGauges(nowMs: number): void {
    for (const [rank, list] of this.active) {
      const live = list.filter((a) => a.finishMs > nowMs);
      this.active.set(rank, live);
      const running = live.filter((a) => a.startMs <= nowMs);
      const usedBlocks = running.reduce((sum, a) => sum + a.blocks, 0);
      this.engine.setGauges(rank, {
        running: running.length,
        waiting: live.length - running.length,
        kvCacheUsage: Math.min(1, usedBlocks / this.cluster.capacityBlocks),
      });
    }
  }

  /** The relay process dies; the engine keeps serving (and keeps publishing to no one). */
  async stopRelay(): Promise<void> {
    const relay = this.relayValue;
    this.relayValue = null;
    await relay?.shutdown();
  }

  async stop(): Promise<void> {
    await this.stopRelay();
    await this.engine.stop();
  }

  /** In-DC routing with exact local knowledge: longest resident prefix, then the earliest free slot. */
  private pickRank(prompt: ReturnType<SimulatedEngine['workload']['prompt']>, nowMs: number): number {
    let best = -1;
    let bestKey: [number, number] = [-1, 0];
    for (const [rank, slots] of this.slots) {
      const key: [number, number] = [this.engine.workload.residentPrefix(rank, prompt), -Math.max(nowMs, Math.min(...slots))];
      if (best < 0 || key[0] > bestKey[0] || (key[0] === bestKey[0] && key[1] > bestKey[1])) {
        best = rank;
        bestKey = key;
      }
    }
    return best;
  }
}

/** The DC's relay config: one aggregated endpoint whose one worker is the engine. */
function relayConfig(name: string, engine: SimulatedEngine, cluster: ClusterOptions, model: string): Record<string, unknown> {
  return {
    dcId: name,
    bind: '127.0.0.1:0',
    expectedUniqueBlocks: cluster.expectedUniqueBlocks,
    timing: { publicationDelayMs: 1, loadWindowMs: cluster.loadWindowMs },
    endpoints: [
      {
        namespace: POOL_NAMESPACE,
        component: 'backend',
        endpoint: 'generate',
        model: { name: model, kvBlockSize: cluster.blockSize },
        workerType: 'aggregated',
        workers: [
          {
            id: 1,
            dpSize: engine.dpSize,
            totalKvBlocks: cluster.capacityBlocks,
            maxNumSeqs: cluster.maxNumSeqs,
            health: { url: `${engine.httpUrl}/health` },
            metrics: { url: `${engine.httpUrl}/metrics`, format: 'vllm' },
            kvEvents: { endpoint: engine.pubEndpoint, replayEndpoint: engine.replayEndpoint },
          },
        ],
      },
    ],
  };
}
