// One request of the simulation as every process sees it. The prompt travels in its compact form
// (the trace's block ids, or explicit tokens) and each process expands it to the same token ids, so
// the router hashes, the engines cache and the relays publish exactly the same tokens.

/** The trace's blocks (each id one deterministic block of tokens), or the tokens themselves. */
export type PromptSpec =
  | { kind: 'blocks'; ids: readonly number[]; blockTokens: number; length: number }
  | { kind: 'tokens'; tokens: Uint32Array };

export interface SimRequest {
  id: number;
  /** When the request reaches the router (simulated ms since the run started). */
  arrivalMs: number;
  prompt: PromptSpec;
  /** Prompt length in tokens. */
  inputTokens: number;
  outputTokens: number;
  /** The answer's token ids when the workload knows them (a chat's next turn repeats them). */
  outputIds?: Uint32Array;
}

/** Llama 3's vocabulary: expanded token ids stay in the range a real tokenizer produces. */
export const VOCAB_SIZE = 128_256;

/** murmur3's 32-bit finalizer: a cheap, well-mixed function of its input. */
export function mix32(x: number): number {
  let h = x >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Token j of the trace block with this id: equal ids give equal blocks, different ids different ones. */
function blockToken(id: number, j: number): number {
  return mix32(mix32(id ^ 0x5bd1e995) + Math.imul(j + 1, 0x9e3779b1)) % VOCAB_SIZE;
}

export function promptLength(spec: PromptSpec): number {
  return spec.kind === 'tokens' ? spec.tokens.length : spec.length;
}

/** The prompt's token ids (a block-form prompt is its blocks' tokens, the last one cut at `length`). */
export function promptTokens(spec: PromptSpec): Uint32Array {
  if (spec.kind === 'tokens') return spec.tokens;
  const out = new Uint32Array(spec.length);
  for (let i = 0; i < spec.length; i++) out[i] = blockToken(spec.ids[Math.floor(i / spec.blockTokens)], i % spec.blockTokens);
  return out;
}

/** The answer's token ids: the workload's, else derived from the request id (never part of a later prompt). */
export function outputIds(request: Pick<SimRequest, 'id' | 'outputTokens' | 'outputIds'>): Uint32Array {
  if (request.outputIds) return request.outputIds;
  const out = new Uint32Array(request.outputTokens);
  for (let i = 0; i < out.length; i++) out[i] = mix32(Math.imul(request.id + 1, 0x27d4eb2f) ^ mix32(i)) % VOCAB_SIZE;
  return out;
}

/** What an engine runs: the prompt followed by the answer it will generate. */
export function engineRequest(request: SimRequest): { id: number; tokens: Uint32Array; promptTokens: number; outputTokens: number } {
  const prompt = promptTokens(request.prompt);
  const answer = outputIds(request);
  const tokens = new Uint32Array(prompt.length + answer.length);
  tokens.set(prompt);
  tokens.set(answer, prompt.length);
  return { id: request.id, tokens, promptTokens: prompt.length, outputTokens: request.outputTokens };
}
