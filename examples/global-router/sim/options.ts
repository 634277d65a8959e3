// Every knob of the multi-DC simulation with its default, in one place (the CLI in main.ts sets each
// of them). The defaults are the evaluation's: the Mooncake trace on three DCs of different sizes and
// distances, each rank a calibrated Llama-3.1-8B on an A100 (engine/calibration.ts).
import { LLAMA3_8B_A100 } from './engine/calibration';

/** The synthetic multi-tenant workload (workload.ts), the second workload beside the trace. */
export interface WorkloadOptions {
  seed: number;
  /** Tenants share nothing; each has a system prompt, a document corpus and chats. */
  tenants: number;
  /** Zipf exponent of tenant popularity. */
  tenantSkew: number;
  /** Request mix: multi-turn chat, RAG over the tenant's documents, one-shot questions (weights). */
  mix: { chat: number; rag: number; oneShot: number };
  systemPromptTokens: [number, number];
  documentsPerTenant: number;
  documentTokens: [number, number];
  /** Zipf exponent of document popularity within a tenant. */
  documentSkew: number;
  /** Chats alive per tenant; a chat request continues one of them or replaces the oldest. */
  chatsPerTenant: number;
  /** Probability that a chat request continues an existing chat rather than starting one. */
  continueChat: number;
  maxTurns: number;
  userTokens: [number, number];
  /** Output of a request; a chat's answer becomes part of its next turn's prompt. */
  answerTokens: [number, number];
  vocabSize: number;
}

export const DEFAULT_WORKLOAD: Readonly<WorkloadOptions> = Object.freeze({
  seed: 7,
  tenants: 16,
  tenantSkew: 1.0,
  mix: { chat: 0.5, rag: 0.35, oneShot: 0.15 },
  systemPromptTokens: [256, 1024] as [number, number],
  documentsPerTenant: 16,
  documentTokens: [512, 2048] as [number, number],
  documentSkew: 1.1,
  chatsPerTenant: 6,
  continueChat: 0.75,
  maxTurns: 8,
  userTokens: [16, 192] as [number, number],
  answerTokens: [64, 384] as [number, number],
  vocabSize: 32_000,
});

export interface DcSpec {
  name: string;
  /** Data-parallel ranks (GPUs running one engine each) behind the DC's relay. */
  ranks: number;
  /** One-way WAN delay between the routers and this DC (requests, responses and the relay's stream). */
  oneWayMs: number;
}

/** Three DCs of different sizes and distances: the routers sit next to the largest. */
export const DEFAULT_DCS: readonly DcSpec[] = Object.freeze([
  { name: 'dc-a', ranks: 4, oneWayMs: 5 },
  { name: 'dc-b', ranks: 2, oneWayMs: 20 },
  { name: 'dc-c', ranks: 2, oneWayMs: 40 },
]);

export interface EngineSpec {
  /** vLLM's default block size. */
  blockSize: number;
  kvCapacityTokens: number;
  maxNumSeqs: number;
  maxBatchedTokens: number;
}

export const DEFAULT_ENGINE: Readonly<EngineSpec> = Object.freeze({
  blockSize: 16,
  kvCapacityTokens: LLAMA3_8B_A100.kvCapacityTokens,
  maxNumSeqs: 256,
  maxBatchedTokens: 8192,
});

export type WorkloadKind = 'trace' | 'synthetic';

export interface RunDefaults {
  workload: WorkloadKind;
  /** Relative to the working directory (the repository root under npm run). */
  tracePath: string;
  /** Requests per run, and how many of them warm the caches before measuring. */
  requests: number;
  warmup: number;
  /** Offered load as a fraction of the cluster's capacity (see capacity.ts). */
  loads: number[];
  seeds: number[];
  /** Per-request TTFT SLO: max(floor, scale × the prompt's prefill alone on an idle rank + its DC's round trip). */
  sloScale: number;
  sloFloorMs: number;
  /** Simulated ms per wall ms; 'auto' paces every load point at `wallRequestsPerS`. */
  speed: number | 'auto';
  wallRequestsPerS: number;
  /** Wall ms between DC advances while waiting for the next arrival (how promptly KV events go out). */
  tickMs: number;
  /** How often each relay scrapes and publishes KV usage (wall ms). */
  loadWindowMs: number;
  /** A request sent to an unreachable DC fails after this long (simulated) and is routed again. */
  failureTimeoutMs: number;
  model: string;
}

export const DEFAULT_RUN: Readonly<RunDefaults> = Object.freeze({
  workload: 'trace' as WorkloadKind,
  tracePath: '../shared/traces/mooncake_conversation_trace.jsonl',
  requests: 900,
  warmup: 350,
  loads: [0.2, 0.45, 0.7, 0.95, 1.2],
  seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  sloScale: 2,
  sloFloorMs: 1000,
  speed: 'auto' as const,
  wallRequestsPerS: 50,
  tickMs: 5,
  loadWindowMs: 100,
  failureTimeoutMs: 1000,
  model: 'llama-3.1-8b',
});
