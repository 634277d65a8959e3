// The shared multi-tenant request stream: per tenant a system prompt, a document corpus (RAG) and
// multi-turn chats whose history grows turn by turn; tenants and documents have Zipf popularity.
// Deterministic for a seed, and independent of routing, so every policy sees the same requests.
import { Rng } from '../../../src/sim/rng';
import { DEFAULT_WORKLOAD, type WorkloadOptions } from './options';
import type { SimRequest } from './request';
import { Zipf } from './zipf';

export type RequestKind = 'chat' | 'rag' | 'oneShot';

/** One request of the stream: its prompt and the answer it will get (a chat's next turn repeats it). */
export interface WorkloadRequest {
  id: number;
  tenant: number;
  kind: RequestKind;
  tokens: Uint32Array;
  outputTokens: number;
  answer: Uint32Array;
}

interface Chat {
  history: number[];
  turns: number;
}

interface Tenant {
  system: number[];
  documents: (number[] | undefined)[];
  chats: Chat[];
}

export class MultiTenantWorkload {
  readonly options: WorkloadOptions;
  private readonly rng: Rng;
  private readonly tenantZipf: Zipf;
  private readonly documentZipf: Zipf;
  private readonly tenants: Tenant[];
  private nextId = 0;

  constructor(options: Partial<WorkloadOptions> = {}) {
    const o = (this.options = { ...DEFAULT_WORKLOAD, ...options });
    for (const [name, [lo, hi]] of Object.entries({
      systemPromptTokens: o.systemPromptTokens,
      documentTokens: o.documentTokens,
      userTokens: o.userTokens,
      answerTokens: o.answerTokens,
    })) {
      if (!(Number.isInteger(lo) && Number.isInteger(hi) && lo >= 1 && lo <= hi)) throw new RangeError(`${name} must be an integer range [min ≥ 1, max ≥ min]`);
    }
    if (!(o.mix.chat >= 0 && o.mix.rag >= 0 && o.mix.oneShot >= 0 && o.mix.chat + o.mix.rag + o.mix.oneShot > 0)) throw new RangeError('mix weights must be ≥ 0 with a positive sum');
    if (!(o.continueChat >= 0 && o.continueChat <= 1)) throw new RangeError('continueChat must be in [0, 1]');
    if (!(Number.isInteger(o.chatsPerTenant) && o.chatsPerTenant >= 1 && Number.isInteger(o.maxTurns) && o.maxTurns >= 1)) throw new RangeError('chatsPerTenant and maxTurns must be ≥ 1');
    this.rng = new Rng(o.seed);
    this.tenantZipf = new Zipf(o.tenants, o.tenantSkew);
    this.documentZipf = new Zipf(o.documentsPerTenant, o.documentSkew);
    // Content is drawn from its own stream per item, so it does not depend on the request order.
    this.tenants = Array.from({ length: o.tenants }, (_, t) => ({
      system: this.tokens(new Rng(derivedSeed(o.seed, t, -1)), o.systemPromptTokens),
      documents: new Array<number[] | undefined>(o.documentsPerTenant),
      chats: [],
    }));
  }

  next(): WorkloadRequest {
    const o = this.options;
    const t = this.tenantZipf.sample(this.rng);
    const tenant = this.tenants[t];
    const kind = this.kind();
    let prompt: number[];
    const outputTokens = this.rng.range(o.answerTokens[0], o.answerTokens[1]);
    let answer: number[];
    if (kind === 'chat') {
      const chat = this.chat(tenant);
      prompt = [...chat.history, ...this.tokens(this.rng, o.userTokens)];
      chat.turns += 1;
      // The answer is part of the next turn's prompt; a finished chat leaves the tenant's set.
      answer = this.tokens(this.rng, [outputTokens, outputTokens]);
      chat.history = [...prompt, ...answer];
      if (chat.turns >= o.maxTurns) tenant.chats.splice(tenant.chats.indexOf(chat), 1);
    } else if (kind === 'rag') {
      prompt = [...tenant.system, ...this.document(t, this.documentZipf.sample(this.rng)), ...this.tokens(this.rng, o.userTokens)];
    } else {
      prompt = [...tenant.system, ...this.tokens(this.rng, o.userTokens)];
    }
    answer ??= this.tokens(this.rng, [outputTokens, outputTokens]);
    return { id: this.nextId++, tenant: t, kind, tokens: Uint32Array.from(prompt), outputTokens, answer: Uint32Array.from(answer) };
  }

  private kind(): RequestKind {
    const { chat, rag, oneShot } = this.options.mix;
    const u = this.rng.next() * (chat + rag + oneShot);
    return u < chat ? 'chat' : u < chat + rag ? 'rag' : 'oneShot';
  }

  private chat(tenant: Tenant): Chat {
    const o = this.options;
    if (tenant.chats.length > 0 && this.rng.next() < o.continueChat) return this.rng.pick(tenant.chats);
    if (tenant.chats.length >= o.chatsPerTenant) tenant.chats.shift();
    const chat: Chat = { history: tenant.system, turns: 0 };
    tenant.chats.push(chat);
    return chat;
  }

  private document(t: number, d: number): number[] {
    const docs = this.tenants[t].documents;
    return (docs[d] ??= this.tokens(new Rng(derivedSeed(this.options.seed, t, d)), this.options.documentTokens));
  }

  private tokens(rng: Rng, [min, max]: [number, number]): number[] {
    return Array.from({ length: rng.range(min, max) }, () => rng.int(this.options.vocabSize));
  }

  /** `count` requests with Poisson arrivals at `ratePerS` (their own seeded stream), as the replay takes them. */
  requests(count: number, ratePerS: number): SimRequest[] {
    const arrivals = new Rng(this.options.seed ^ 0xa441a1);
    let t = 0;
    return Array.from({ length: count }, () => {
      const r = this.next();
      t += (-Math.log(1 - arrivals.next()) * 1000) / ratePerS;
      return { id: r.id, arrivalMs: t, prompt: { kind: 'tokens', tokens: r.tokens }, inputTokens: r.tokens.length, outputTokens: r.outputTokens, outputIds: r.answer };
    });
  }
}

/** A stable seed per (run seed, tenant, item); item −1 is the system prompt. */
function derivedSeed(seed: number, tenant: number, item: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(tenant + 1, 0xc2b2ae35) ^ Math.imul(item + 2, 0x27d4eb2f)) >>> 0;
}
