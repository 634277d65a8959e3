// The engine model's hardware and model numbers, each with where it comes from. One rank is one
// vLLM engine: Llama-3.1-8B (bf16 weights and KV cache) on one NVIDIA A100-SXM4-80GB.
//
// Sources:
// - [vidur] Microsoft Vidur (MLSys 2024, arXiv:2405.05465), profiling data measured with
//   sarathi-serve on an A100 80 GB: data/profiling/compute/a100/meta-llama/Meta-Llama-3-8B/mlp.csv,
//   https://github.com/microsoft/vidur. Per batch size (num_tokens, TP 1), the median time of every
//   non-attention operator; `linearMs` below is emb + 32 × (both layer norms, QKV projection, RoPE,
//   output projection, MLP up/act/down, residual add), taken at the listed batch sizes.
// - [fa2] Tri Dao, FlashAttention-2 (ICLR 2024, arXiv:2307.08691): the forward pass reaches 50-73 %
//   of the A100's 312 TFLOPs/s bf16 peak; we take 200 TFLOPs/s (64 %) for prefill attention.
// - [llama3] Llama-3.1-8B's config.json: 32 layers, hidden 4096 (32 query heads × 128), 8 KV heads,
//   MLP 14336; 6.98 B parameters in the layers' linear weights.
// - [a100] The decode step at batch 1 is bound by reading the weights: 13.96 GB in vidur's 9.70 ms
//   is an effective 1.44 TB/s (71 % of the datasheet's 2.04 TB/s); decode attention reads each
//   context token's KV (2 × 32 layers × 8 heads × 128 × 2 B = 128 KiB) at that same rate.
// - KV capacity: vLLM's gpu_memory_utilization 0.9 of 80 GB, less 16.06 GB of weights and ~2 GB of
//   activations and CUDA graphs (our estimate for an 8192-token batch) ≈ 53.9 GB of KV cache:
//   411 k tokens, 25 700 blocks of 16.

export interface EngineCalibration {
  /** What one rank is: model, GPU, precision. */
  name: string;
  /** Non-attention forward time (ms) of a batch of `tokens` tokens, interpolated linearly. [vidur] */
  linearMs: readonly (readonly [tokens: number, ms: number])[];
  /** FLOPs of attention per (query, key) pair over the whole model: 4 × hidden × layers. [llama3] */
  attentionFlopsPerPair: number;
  /** Prefill attention throughput. [fa2] */
  attentionFlopsPerS: number;
  /** KV bytes per token over all layers. [llama3] */
  kvBytesPerToken: number;
  /** Effective HBM read rate of a decode step. [a100] */
  memoryBytesPerS: number;
  /** KV cache per rank, in tokens. */
  kvCapacityTokens: number;
}

const LLAMA3_8B_LINEAR_WEIGHT_BYTES = 6.979e9 * 2;
const VIDUR_LINEAR_MS: readonly (readonly [number, number])[] = [
  [1, 9.7],
  [8, 9.99],
  [16, 10.14],
  [32, 10.92],
  [64, 11.24],
  [128, 13.19],
  [256, 19.5],
  [512, 34.67],
  [1024, 75.2],
  [2048, 143.8],
  [4096, 273.49],
  [8192, 544.38],
  [16384, 1092.92],
  [32768, 2178.03],
];

export const LLAMA3_8B_A100: EngineCalibration = Object.freeze({
  name: 'Llama-3.1-8B bf16 on 1 × A100-SXM4-80GB (vLLM)',
  linearMs: VIDUR_LINEAR_MS,
  attentionFlopsPerPair: 4 * 4096 * 32,
  attentionFlopsPerS: 200e12,
  kvBytesPerToken: 2 * 32 * 8 * 128 * 2,
  memoryBytesPerS: LLAMA3_8B_LINEAR_WEIGHT_BYTES / (VIDUR_LINEAR_MS[0][1] / 1000),
  kvCapacityTokens: 411_200,
});

/** Where each number came from, for reports. */
export const CALIBRATION_SOURCES = [
  'Microsoft Vidur profiling, Meta-Llama-3-8B on A100 80 GB (mlp.csv, MLSys 2024): https://github.com/microsoft/vidur',
  'FlashAttention-2 forward throughput on A100 (arXiv:2307.08691)',
  'Llama-3.1-8B config (32 layers, hidden 4096, 8 KV heads)',
] as const;
