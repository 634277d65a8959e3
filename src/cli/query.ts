// `kv-dc-relay query`: connects (to every relay shard, merged), waits for the catalog and the
// replicas of the pools the model resolves to, and prints each pool's matched prefix depth with its
// readiness and load. Loads the client only (no relay addon, no ZMQ).
import { readFile } from 'fs/promises';
import { QUERY_SETTLE_MS, QUERY_TIMEOUT_MS } from '../config/defaults';
import { MAX_U32 } from '../config/limits';
import { ShardedRelayClient, type QueryRequest, type QueryResult } from '../client';
import { EtcdShardAddresses } from '../discovery/shard-addresses';
import { buildNameIndex, resolveName, type Binding } from '../client/name-index';
import { queryPoolView } from '../client/views';
import type { ClientTlsOptions } from '../security/client-tls';
import type { KvPoolDescriptor } from '../wire/types';
import { clientTls, connectionCause, EXIT, parseRelayAddresses, UsageError, type TlsOptionValues } from './usage';
import type { CliIo } from './io';


/** Token ids separated by commas and/or whitespace, or a JSON array; each a u32. */
export function parseTokens(text: string): number[] {
  const trimmed = text.trim();
  let items: unknown[];
  try {
    items = trimmed.startsWith('[') ? (JSON.parse(trimmed) as unknown[]) : trimmed.split(/[\s,]+/).filter((s) => s.length > 0);
  } catch (err) {
    throw new UsageError(`tokens: not a JSON array (${(err as Error).message})`);
  }
  if (!Array.isArray(items) || items.length === 0) throw new UsageError('no tokens given');
  return items.map((item) => {
    const n = typeof item === 'number' ? item : /^\d+$/.test(String(item)) ? Number(item) : NaN;
    if (!Number.isInteger(n) || n < 0 || n > MAX_U32) throw new UsageError(`invalid token id ${JSON.stringify(item)} (expected an integer in 0..${MAX_U32})`);
    return n;
  });
}

export interface QueryOptions extends QueryRequest {
  /** One relay, the shards of one, or their entries in etcd. */
  address: string | string[] | { etcd: string[]; prefix: string };
  subscriberId?: string;
  timeoutMs?: number;
  /** TLS to every relay shard; plaintext when omitted. */
  tls?: ClientTlsOptions;
}

export interface QueryOutcome {
  result: QueryResult;
  /** What the catalog serves (to name it when the model or adapter is unknown); undefined without a catalog. */
  served: ServedModel[] | undefined;
  /** Per relay address, the last connection failure seen (gRPC's message), when the answer is incomplete. */
  failures: Map<string, string>;
}

/**
 * Resolves once the answer is complete (catalog, readiness, load and every resolved pool's replica)
 * and has had QUERY_SETTLE_MS to take the deltas queued behind a snapshot, or when the wait runs out.
 */
export async function queryRelay(options: QueryOptions): Promise<QueryOutcome> {
  const { address } = options;
  const shards = typeof address === 'string' ? [address] : Array.isArray(address) ? address : new EtcdShardAddresses({ endpoints: address.etcd }, address.prefix);
  const client = new ShardedRelayClient(shards, {
    subscriberId: options.subscriberId ?? 'kv-dc-relay-query',
    ...(options.tls ? { tls: options.tls } : {}),
    // Only the resolved pools need a replica; the others would cost a snapshot download each.
    pools: (pool, catalog) => {
      const r = resolveName(buildNameIndex(catalog.pools), options.model);
      return r.kind === 'resolved' && r.pools.some((p) => p.pool.poolKey === pool.poolKey);
    },
  });
  const request: QueryRequest = { model: options.model, tokens: options.tokens, lora: options.lora };
  const failures = new Map<string, string>();
  client.on('error', (e) => failures.set(e.address, e.message));
  try {
    const result = await new Promise<QueryResult>((resolve) => {
      let settle: NodeJS.Timeout | undefined;
      // Closing the client after the answer may emit 'changed' once more: no settle timer then.
      let done = false;
      const complete = (result: QueryResult): boolean =>
        result.kind === 'ok'
          ? client.readiness() !== undefined && client.load() !== undefined && result.pools.every((p) => p.matchedBlocks !== null)
          : result.kind !== 'noCatalog';
      const finish = (result: QueryResult) => {
        done = true;
        clearTimeout(timer);
        clearTimeout(settle);
        resolve(result);
      };
      const settled = () => {
        settle = undefined;
        const result = client.query(request);
        if (complete(result)) finish(result);
      };
      const timer = setTimeout(() => finish(client.query(request)), options.timeoutMs ?? QUERY_TIMEOUT_MS);
      client.on('changed', () => {
        if (!done && settle === undefined && complete(client.query(request))) settle = setTimeout(settled, QUERY_SETTLE_MS);
      });
      client.start();
    });
    const catalog = client.catalog();
    return { result, failures, served: catalog && servedModels(catalog.pools.map((p) => p.descriptor)) };
  } finally {
    client.close();
  }
}

/** A base model the catalog serves, with its aliases and the LoRA adapters served on it. */
export interface ServedModel {
  model: string;
  aliases: string[];
  adapters: string[];
}

/** Every base model of the catalog's registrations (sorted), each with its aliases and adapters. */
export function servedModels(pools: readonly KvPoolDescriptor[]): ServedModel[] {
  const byBase = new Map<string, { aliases: Set<string>; adapters: Set<string> }>();
  const entry = (base: string) => byBase.get(base) ?? byBase.set(base, { aliases: new Set(), adapters: new Set() }).get(base)!;
  for (const r of pools.flatMap((p) => p.registrations)) {
    if (r.target?.base) for (const alias of r.aliases) entry(r.target.base.baseModel).aliases.add(alias);
    else if (r.target?.lora) entry(r.target.lora.baseModel).adapters.add(r.target.lora.adapter);
  }
  return [...byBase.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([model, e]) => ({ model, aliases: [...e.aliases].sort(), adapters: [...e.adapters].sort() }));
}

/** The answer has no pool because no pool serves the requested adapter on the resolved base model. */
function unknownAdapter(result: QueryResult, lora: string | undefined): Binding | undefined {
  return result.kind === 'ok' && result.pools.length === 0 && lora !== undefined && result.binding.adapter === undefined ? result.binding : undefined;
}

function servedText(served: ServedModel[] | undefined): string {
  if (!served || served.length === 0) return 'the catalog serves no model';
  const model = (m: ServedModel) => `${m.model}${m.aliases.length ? ` (aliases ${m.aliases.join(', ')})` : ''}`;
  return `served: ${served.map(model).join('; ')}`;
}

function adaptersText(served: ServedModel[] | undefined, base: string): string {
  const adapters = served?.find((m) => m.model === base)?.adapters ?? [];
  return adapters.length ? `adapters served on ${base}: ${adapters.join(', ')}` : `no LoRA adapter is served on ${base}`;
}

export function formatQueryResult(model: string, result: QueryResult, lora?: string, served?: ServedModel[]): string {
  const base = unknownAdapter(result, lora);
  if (base) return `LoRA adapter ${JSON.stringify(lora)} is not served on ${base.baseModel}; ${adaptersText(served, base.baseModel)}\n`;
  switch (result.kind) {
    case 'noCatalog':
      return 'no catalog received from the relay\n';
    case 'unknownModel':
      return `model ${JSON.stringify(model)} is not served by any pool in the catalog; ${servedText(served)}\n`;
    case 'ambiguousModel':
      return `model name ${JSON.stringify(model)} is ambiguous (${result.bindings.map((b) => b.canonicalModelId).join(', ')}); omitted fail-closed\n`;
    case 'loraMismatch':
      return `model ${JSON.stringify(model)} is LoRA adapter ${result.binding.adapter}, not the requested one\n`;
    case 'ok': {
      const b = result.binding;
      const lines = [`model ${b.canonicalModelId} (${b.adapter ? `LoRA ${b.adapter} on ${b.baseModel}` : `base ${b.baseModel}`}): ${result.pools.length} pool(s)`];
      for (const p of result.pools.map(queryPoolView)) {
        const depth = p.matchedBlocks === null ? `${p.replica} replica` : `depth ${p.matchedBlocks}/${p.queryBlocks} blocks = ${p.matchedTokens} tokens`;
        const load = p.load ? `  kv ${p.load.kvUsedBlocks}/${p.load.totalKvBlocks}` : '';
        lines.push(`  ${p.endpoint}  ${depth}  (bs ${p.kvBlockSize} ${p.hashFormat})  readiness ${p.readiness ?? '-'}${load}`);
      }
      return `${lines.join('\n')}\n`;
    }
  }
}

export function queryResultJson(model: string, result: QueryResult, lora?: string, served?: ServedModel[]): object {
  const base = unknownAdapter(result, lora);
  if (base) return { model, lora, error: 'unknownAdapter', binding: base, served: served ?? [] };
  if (result.kind === 'unknownModel') return { model, error: result.kind, served: served ?? [] };
  if (result.kind !== 'ok') return { model, error: result.kind, ...(result.kind === 'ambiguousModel' ? { candidates: result.bindings } : {}) };
  return { model, binding: result.binding, pools: result.pools.map(queryPoolView) };
}

export interface QueryFlags extends TlsOptionValues {
  model: string;
  tokens?: string;
  tokensFile?: string;
  lora?: string;
  json?: boolean;
  timeoutMs: number;
  subscriberId?: string;
  etcd?: string;
  prefix?: string;
}

/** Checks the command line (UsageError) before anything connects. */
async function queryOptions(addresses: string | undefined, flags: QueryFlags): Promise<QueryOptions> {
  if ((flags.etcd === undefined) !== (flags.prefix === undefined)) throw new UsageError('--etcd and --prefix go together');
  if ((addresses === undefined) === (flags.etcd === undefined)) throw new UsageError('give the relay as HOST:PORT[,HOST:PORT...], or --etcd with --prefix');
  if ((flags.tokens === undefined) === (flags.tokensFile === undefined)) throw new UsageError('give exactly one of --tokens and --tokens-file');
  let text = flags.tokens;
  if (text === undefined) {
    try {
      text = await readFile(flags.tokensFile!, 'utf8');
    } catch (err) {
      throw new UsageError(`--tokens-file ${flags.tokensFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  const address = flags.etcd !== undefined ? { etcd: parseRelayAddresses(flags.etcd), prefix: flags.prefix! } : parseRelayAddresses(addresses!);
  return { address, model: flags.model, tokens: parseTokens(text), lora: flags.lora, timeoutMs: flags.timeoutMs, subscriberId: flags.subscriberId, tls: clientTls(flags) };
}

/** Why there is no answer: gRPC's cause per relay (the address named when there are several). */
function unreachable(outcome: QueryOutcome): string {
  const failures = [...outcome.failures];
  if (failures.length === 0) return 'no catalog arrived';
  if (failures.length === 1) return connectionCause(failures[0][1]);
  return failures.map(([address, message]) => `${address}: ${connectionCause(message)}`).join('; ');
}

/** `kv-dc-relay query`: 0 = answered, 1 = no answer (unreachable, no catalog, unknown or ambiguous model, unknown adapter). */
export async function runQuery(addresses: string | undefined, flags: QueryFlags, io: CliIo): Promise<number> {
  const options = await queryOptions(addresses, flags);
  const outcome = await queryRelay(options);
  const { result } = outcome;
  if (result.kind === 'noCatalog') {
    const { address } = options;
    const where = typeof address === 'string' ? address : Array.isArray(address) ? address.join(',') : `the relay shards under ${address.prefix} in etcd`;
    const cause = unreachable(outcome);
    if (flags.json) io.stdout.write(`${JSON.stringify({ ...queryResultJson(options.model, result), cause })}\n`);
    io.stderr.write(`kv-dc-relay query: no answer from ${where} within ${options.timeoutMs} ms: ${cause}\n`);
    return EXIT.failure;
  }
  const { lora } = options;
  io.stdout.write(
    flags.json ? `${JSON.stringify(queryResultJson(options.model, result, lora, outcome.served))}\n` : formatQueryResult(options.model, result, lora, outcome.served),
  );
  return result.kind === 'ok' && unknownAdapter(result, lora) === undefined ? EXIT.ok : EXIT.failure;
}
