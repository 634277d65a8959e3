// Every knob of the multi-DC simulation with its default, in one place. The defaults size the
// caches so one DC holds roughly a third of the hot working set: where a prefix is served decides
// whether it is reused, which is the regime a KV-aware global router exists for.

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

export interface ClusterOptions {
  dcs: number;
  /** Data-parallel ranks per DC (one engine, one pool); the DC routes to the rank with the longest cached prefix. */
  ranksPerDc: number;
  /** KV cache per rank, in blocks. */
  capacityBlocks: number;
  blockSize: number;
  /** Concurrent requests per rank (vLLM max_num_seqs); the relay publishes the pool's sum as max_concurrency. */
  maxNumSeqs: number;
  /** Simulated service time: prefill per uncached prompt token and decode per output token. */
  prefillMsPerToken: number;
  decodeMsPerToken: number;
  /** Relay: CKF sizing and load window (KV usage is scraped once per window). */
  expectedUniqueBlocks: number;
  loadWindowMs: number;
}

export interface RunOptions {
  requests: number;
  /** Mean gap between arrivals (exponential inter-arrival times, seeded). */
  intervalMs: number;
  /** Leading fraction of requests left out of the measurements (caches warm up). */
  warmup: number;
  /** One-way delay added each way between the router and every relay. */
  wanDelayMs: number;
  /** Stop one DC's relay after this fraction of the requests (undefined: all stay up). */
  relayDownAt?: number;
  model: string;
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

export const DEFAULT_CLUSTER: Readonly<ClusterOptions> = Object.freeze({
  dcs: 3,
  ranksPerDc: 2,
  capacityBlocks: 2048,
  blockSize: 16,
  maxNumSeqs: 8,
  prefillMsPerToken: 0.05,
  decodeMsPerToken: 0.4,
  expectedUniqueBlocks: 16_384,
  loadWindowMs: 200,
});

export const DEFAULT_RUN: Readonly<RunOptions> = Object.freeze({
  requests: 2000,
  intervalMs: 20,
  warmup: 0.2,
  wanDelayMs: 1,
  model: 'llama-3.1-8b',
});

/** WAN delays of the lag sweep (one-way, ms). */
export const LAG_SWEEP_MS = [1, 20, 100] as const;
/** When the relay-down scenario stops a DC's relay. */
export const DEFAULT_RELAY_DOWN_AT = 0.4;
