// `kv-dc-relay query HOST:PORT[,HOST:PORT...] | --etcd HOST:PORT --prefix PREFIX --model NAME
// --tokens 1,2,3 | --tokens-file FILE [--lora NAME] [--json]`: connects (to every relay shard, merged),
// waits for the catalog and the replicas of the pools the model resolves to, and prints each pool's
// matched prefix depth with its readiness and load.
import { readFile } from 'fs/promises';
import { parseArgs } from 'util';
import { QUERY_SETTLE_MS, QUERY_WAIT_MS } from '../config/defaults';
import { MAX_U32 } from '../config/limits';
import { ShardedRelayClient, type QueryRequest, type QueryResult } from '../client';
import { EtcdShardAddresses } from '../discovery/shard-addresses';
import { buildNameIndex, resolveName } from '../client/name-index';
import { queryPoolView } from '../client/views';
import type { ClientTlsOptions } from '../security/client-tls';
import { CLIENT_TLS_FLAGS, CLIENT_TLS_USAGE, clientTlsFromFlags } from '../client/tls-flags';

export const QUERY_USAGE =
  'usage: kv-dc-relay query (HOST:PORT[,HOST:PORT...] | --etcd HOST:PORT[,...] --prefix PREFIX) --model NAME (--tokens 1,2,3 | --tokens-file FILE) [--lora NAME] [--json] [--timeout-ms N] [--subscriber-id ID] ' +
  CLIENT_TLS_USAGE;

export class UsageError extends Error {}

/** Token ids separated by commas and/or whitespace, or a JSON array; each a u32. */
export function parseTokens(text: string): number[] {
  const trimmed = text.trim();
  const items: unknown[] = trimmed.startsWith('[') ? (JSON.parse(trimmed) as unknown[]) : trimmed.split(/[\s,]+/).filter((s) => s.length > 0);
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

/**
 * Resolves once the answer is complete (catalog, readiness, load and every resolved pool's replica)
 * and has had QUERY_SETTLE_MS to take the deltas queued behind a snapshot, or when the wait runs out.
 */
export async function queryRelay(options: QueryOptions): Promise<QueryResult> {
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
  try {
    return await new Promise<QueryResult>((resolve) => {
      let settle: NodeJS.Timeout | undefined;
      const complete = (result: QueryResult): boolean =>
        result.kind === 'ok'
          ? client.readiness() !== undefined && client.load() !== undefined && result.pools.every((p) => p.matchedBlocks !== null)
          : result.kind !== 'noCatalog';
      const finish = (result: QueryResult) => {
        clearTimeout(timer);
        clearTimeout(settle);
        resolve(result);
      };
      const settled = () => {
        settle = undefined;
        const result = client.query(request);
        if (complete(result)) finish(result);
      };
      const timer = setTimeout(() => finish(client.query(request)), options.timeoutMs ?? QUERY_WAIT_MS);
      client.on('changed', () => {
        if (settle === undefined && complete(client.query(request))) settle = setTimeout(settled, QUERY_SETTLE_MS);
      });
      client.start();
    });
  } finally {
    client.close();
  }
}

export function formatQueryResult(model: string, result: QueryResult): string {
  switch (result.kind) {
    case 'noCatalog':
      return 'no catalog received from the relay\n';
    case 'unknownModel':
      return `model ${JSON.stringify(model)} is not served by any pool in the catalog\n`;
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

export function queryResultJson(model: string, result: QueryResult): object {
  if (result.kind !== 'ok') return { model, error: result.kind, ...(result.kind === 'ambiguousModel' ? { candidates: result.bindings } : {}) };
  return { model, binding: result.binding, pools: result.pools.map(queryPoolView) };
}

/** CLI entry: 0 = answered, 1 = no answer (no catalog, unknown or ambiguous model), 2 = usage error. */
export async function queryCommand(
  argv: string[],
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let options: QueryOptions;
  let json: boolean;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        model: { type: 'string' },
        tokens: { type: 'string' },
        'tokens-file': { type: 'string' },
        lora: { type: 'string' },
        json: { type: 'boolean' },
        'timeout-ms': { type: 'string' },
        'subscriber-id': { type: 'string' },
        etcd: { type: 'string' },
        prefix: { type: 'string' },
        ...CLIENT_TLS_FLAGS,
      },
    });
    if ((values.etcd === undefined) !== (values.prefix === undefined)) throw new UsageError('--etcd and --prefix go together');
    if (positionals.length !== (values.etcd === undefined ? 1 : 0)) throw new UsageError('expected exactly one HOST:PORT[,HOST:PORT...] or --etcd with --prefix');
    if (!values.model) throw new UsageError('--model is required');
    if ((values.tokens === undefined) === (values['tokens-file'] === undefined)) throw new UsageError('give exactly one of --tokens and --tokens-file');
    const text = values.tokens ?? (await readFile(values['tokens-file']!, 'utf8'));
    const timeoutMs = values['timeout-ms'] === undefined ? undefined : Number(values['timeout-ms']);
    if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) throw new UsageError('--timeout-ms must be a positive integer');
    const address = values.etcd !== undefined ? { etcd: values.etcd.split(','), prefix: values.prefix! } : positionals[0].split(',');
    const tls = clientTlsFromFlags(values);
    options = { address, model: values.model, tokens: parseTokens(text), lora: values.lora, timeoutMs, subscriberId: values['subscriber-id'], tls };
    json = values.json ?? false;
  } catch (err) {
    io.stderr.write(`query: ${(err as Error).message}\n${QUERY_USAGE}\n`);
    return 2;
  }
  let result: QueryResult;
  try {
    result = await queryRelay(options);
  } catch (err) {
    io.stderr.write(`query: ${(err as Error).message}\n`);
    return 2;
  }
  io.stdout.write(json ? `${JSON.stringify(queryResultJson(options.model, result))}\n` : formatQueryResult(options.model, result));
  return result.kind === 'ok' ? 0 : 1;
}
