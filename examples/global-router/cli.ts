// `node dist/examples/global-router/cli.js --dc NAME=HOST:PORT [--dc …] --model NAME [options]`
// Connects to every DC's relay, waits until each has sent its catalog, readiness and the model's
// replicas (or --wait-ms passes), then routes one request per stdin line and prints one decision per
// line. A request line is JSON: {"tokens":[…], "model"?: "...", "lora"?: "...", "ttftSloMs"?: N}
// (the request's time-to-first-token target: kv-aware's triage reads it).
import { createInterface } from 'readline';
import { parseArgs } from 'util';
import { CLIENT_TLS_FLAGS, CLIENT_TLS_USAGE, clientTlsFromFlags, type ClientTlsOptions } from 'kv-dc-relay/client';
import { DEFAULT_READY_WAIT_MS, GlobalRouter, POLICY_NAMES, policyByName, type Decision, type DcTarget, type PolicyName, type RouteRequest } from './router';
import { waitReady } from './router/ready';

export const USAGE =
  `usage: global-router --dc NAME=HOST:PORT[/RTT_MS] [--dc …] --model NAME [--policy ${POLICY_NAMES.join('|')}]\n` +
  `                     [--prefill-tokens-per-ms N] [--wait-ms N] [--subscriber-id ID] ${CLIENT_TLS_USAGE}\n` +
  '                     (requests: JSON lines on stdin; the TLS flags apply to every DC\'s relay)';

class UsageError extends Error {}

const MAX_U32 = 0xffff_ffff;

interface CliOptions {
  dcs: DcTarget[];
  model: string;
  policy: PolicyName;
  prefillTokensPerMs?: number;
  waitMs: number;
  subscriberId: string;
  tls?: ClientTlsOptions;
}

export function parseCli(argv: string[]): CliOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dc: { type: 'string', multiple: true },
      model: { type: 'string' },
      policy: { type: 'string' },
      'prefill-tokens-per-ms': { type: 'string' },
      'wait-ms': { type: 'string' },
      'subscriber-id': { type: 'string' },
      ...CLIENT_TLS_FLAGS,
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (!values.dc || values.dc.length === 0) throw new UsageError('at least one --dc NAME=HOST:PORT is required');
  if (!values.model) throw new UsageError('--model is required');
  const policy = values.policy ?? 'kv-aware';
  if (!(POLICY_NAMES as readonly string[]).includes(policy)) throw new UsageError(`unknown policy ${policy} (one of ${POLICY_NAMES.join(', ')})`);
  let tls: ClientTlsOptions | undefined;
  try {
    tls = clientTlsFromFlags(values);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return {
    dcs: values.dc.map(parseDc),
    model: values.model,
    policy: policy as PolicyName,
    prefillTokensPerMs: optionalNumber('--prefill-tokens-per-ms', values['prefill-tokens-per-ms']),
    waitMs: optionalNumber('--wait-ms', values['wait-ms']) ?? DEFAULT_READY_WAIT_MS,
    subscriberId: values['subscriber-id'] ?? 'global-router',
    ...(tls ? { tls } : {}),
  };
}

function parseDc(text: string): DcTarget {
  const m = /^([^=\s]+)=([^\s/]+:\d+)(?:\/(\d+(?:\.\d+)?))?$/.exec(text);
  if (!m) throw new UsageError(`--dc ${JSON.stringify(text)} is not NAME=HOST:PORT[/RTT_MS]`);
  return { name: m[1], address: m[2], ...(m[3] !== undefined ? { rttMs: Number(m[3]) } : {}) };
}

function optionalNumber(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a number ≥ 0`);
  return n;
}

/** One stdin line → a request; the model defaults to --model. */
export function parseRequestLine(line: string, model: string): RouteRequest {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new UsageError('a request line must be JSON');
  }
  const o = value as { tokens?: unknown; model?: unknown; lora?: unknown; ttftSloMs?: unknown };
  if (typeof o !== 'object' || o === null || !Array.isArray(o.tokens)) throw new UsageError('a request needs "tokens": [u32, …]');
  if (!o.tokens.every((t) => Number.isInteger(t) && (t as number) >= 0 && (t as number) <= MAX_U32)) throw new UsageError('every token must be an integer in 0..2^32-1');
  if (o.model !== undefined && typeof o.model !== 'string') throw new UsageError('"model" must be a string');
  if (o.lora !== undefined && typeof o.lora !== 'string') throw new UsageError('"lora" must be a string');
  if (o.ttftSloMs !== undefined && !(typeof o.ttftSloMs === 'number' && Number.isFinite(o.ttftSloMs) && o.ttftSloMs > 0)) throw new UsageError('"ttftSloMs" must be a number > 0');
  return { model: o.model ?? model, tokens: o.tokens as number[], lora: o.lora, ...(o.ttftSloMs !== undefined ? { ttftSloMs: o.ttftSloMs } : {}) };
}

export function decisionJson(decision: Decision): object {
  const pool = (c: NonNullable<Decision['chosen']>) => ({
    dc: c.dc,
    endpoint: c.endpoint,
    poolKey: c.poolKey,
    matchedTokens: c.matchedTokens,
    promptTokens: c.promptTokens,
    ranks: c.ranks,
    capacity: c.capacity,
    kvUsage: c.kvUsage,
    rttMs: c.rttMs,
    inflight: c.inflight,
    pendingPrefillTokens: c.pendingPrefillTokens,
    lastResort: c.lastResort,
  });
  return {
    dc: decision.chosen?.dc ?? null,
    chosen: decision.chosen ? pool(decision.chosen) : null,
    candidates: decision.candidates.map(pool),
    skipped: decision.skipped,
  };
}

/** 0 = every line routed (a line with no eligible DC still prints a decision), 2 = usage error. */
export async function main(argv: string[], io: { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (err) {
    io.stderr.write(`global-router: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const router = new GlobalRouter({
    dcs: options.dcs,
    subscriberId: options.subscriberId,
    ...(options.tls ? { client: { tls: options.tls } } : {}),
    policy: policyByName(options.policy, { prefillTokensPerMs: options.prefillTokensPerMs }),
  });
  router.on('replicaInvalidated', (dc, e) => io.stderr.write(`global-router: ${dc}: replica of ${e.poolKey} invalidated (${e.reason})\n`));
  router.start();
  let status = 0;
  try {
    const missing = await waitReady(router, options.model, options.waitMs);
    if (missing.length > 0) io.stderr.write(`global-router: routing without a complete view of ${missing.join(', ')}\n`);
    for await (const line of createInterface({ input: io.stdin })) {
      if (line.trim() === '') continue;
      try {
        const request = parseRequestLine(line, options.model);
        const decision = router.route(request);
        decision.release(); // the CLI only decides; a forwarding router releases when the response ends
        io.stdout.write(`${JSON.stringify(decisionJson(decision))}\n`);
      } catch (err) {
        io.stderr.write(`global-router: ${(err as Error).message}\n`);
        status = 2;
      }
    }
  } finally {
    router.close();
  }
  return status;
}

if (require.main === module) {
  void main(process.argv.slice(2), process).then((code) => (process.exitCode = code));
}
