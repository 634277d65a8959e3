// `kv-dc-relay status HOST:PORT`: a relay's status view from the admin endpoint of its metrics
// listener (`GET /status`): per source its connection, last sequence, age of its last event, gaps,
// resets and drops; per pool its blocks, filter load, subscribers and delta latency p99; and every
// warning that holds. A table for people, the document itself with --json. Loads no relay code.
import table from 'text-table';
import { STATUS_TIMEOUT_MS } from '../config/defaults';
import type { SourceStatus, StatusDocument, WarningStatus } from '../diagnostics/status';
import { fetchWithDeadline } from '../fetch-deadline';
import type { CliIo } from './io';
import { EXIT, parseRelayAddress } from './usage';

export interface StatusFlags {
  json?: boolean;
  timeoutMs?: number;
}

/** A duration in seconds as people read it: 42 s, 3 min 5 s, 2 h 10 min. */
export function duration(seconds: number): string {
  if (seconds < 10) return `${Math.round(seconds * 10) / 10} s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const drops = (s: SourceStatus): number => Object.values(s.drops).reduce((a, b) => a + b, 0);

function warningLine(w: WarningStatus): string {
  const f = w.fields;
  const where = w.check === 'pool_empty_while_publishing' ? `pool ${f.endpoint} (${f.model})` : `source ${w.subject} at ${f.endpoint}`;
  const detail = w.check === 'block_size_mismatch' ? ` (pool's kvBlockSize ${f.configuredBlockSize}, engine's ${f.receivedBlockSize})` : '';
  return `  ${where}: ${w.message}${detail}, for ${duration(w.forSeconds)}: ${f.action}`;
}

/** The status document as tables: the relay, its sources, its pools, then its warnings. */
export function formatStatus(doc: StatusDocument): string {
  const { relay } = doc;
  const out = [`relay ${relay.dcId}  incarnation ${relay.relayIncarnation}  gRPC ${relay.address}  up ${duration(relay.uptimeSeconds)}`, ''];
  const poolName = new Map(doc.pools.map((p) => [p.pool, p.endpoint]));
  if (doc.sources.length === 0) out.push('no KV-event sources');
  else {
    const rows = doc.sources.map((s) => [
      `${s.worker}/${s.dpRank}`,
      poolName.get(s.pool) ?? s.pool,
      s.endpoint,
      s.connected ? 'connected' : `not connected${s.notConnectedSeconds === null ? '' : ` (${duration(s.notConnectedSeconds)})`}`,
      s.lastSequence ?? '-',
      s.lastEventAgeSeconds === null ? '-' : `${duration(s.lastEventAgeSeconds)} ago`,
      String(s.events),
      String(s.gaps),
      String(s.resets),
      String(drops(s)),
    ]);
    out.push(table([['SOURCE', 'POOL', 'ENDPOINT', 'STATE', 'LAST SEQ', 'LAST EVENT', 'EVENTS', 'GAPS', 'RESETS', 'DROPS'], ...rows], { align: ['l', 'l', 'l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'] }));
  }
  out.push('');
  if (doc.pools.length === 0) out.push('no pools');
  else {
    const rows = doc.pools.map((p) => [
      p.endpoint,
      p.model,
      String(p.kvBlockSize),
      String(p.trackedBlocks),
      p.filterLoad.toFixed(3),
      String(p.subscribers),
      p.deltaLatencyP99Ms === null ? '-' : `${p.deltaLatencyP99Ms.toFixed(1)} ms`,
    ]);
    out.push(table([['POOL', 'MODEL', 'BLOCK SIZE', 'BLOCKS', 'FILTER LOAD', 'SUBSCRIBERS', 'DELTA P99'], ...rows], { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r'] }));
  }
  out.push('', doc.warnings.length === 0 ? 'no warnings' : `warnings (${doc.warnings.length}):`, ...doc.warnings.map(warningLine));
  return `${out.join('\n')}\n`;
}

/** Why the relay did not answer, in the words connectionCause uses for gRPC. */
function fetchCause(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'AbortError') return `connection timed out (no answer within ${timeoutMs} ms)`;
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused (nothing listens there: give the relay\'s metricsBind address)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `name resolution failed (${code})`;
  return e.cause?.message ?? e.message;
}

/** `kv-dc-relay status`: 0 = the relay answered (warnings or not), 1 = no status from it. */
export async function runStatus(address: string, flags: StatusFlags, io: CliIo): Promise<number> {
  parseRelayAddress(address);
  const timeoutMs = flags.timeoutMs ?? STATUS_TIMEOUT_MS;
  const fail = (why: string): number => {
    io.stderr.write(`kv-dc-relay status: no status from ${address}: ${why}\n`);
    return EXIT.failure;
  };
  let answer: { status: number; body: string };
  try {
    answer = await fetchWithDeadline(`http://${address}/status`, timeoutMs, new AbortController().signal, async (res) => ({ status: res.status, body: await res.text() }));
  } catch (err) {
    return fail(fetchCause(err, timeoutMs));
  }
  if (answer.status === 404) return fail('it answers HTTP without a /status endpoint (give the relay\'s metricsBind address)');
  if (answer.status !== 200) return fail(`HTTP ${answer.status}: ${answer.body.trim()}`);
  let doc: StatusDocument;
  try {
    doc = JSON.parse(answer.body) as StatusDocument;
  } catch {
    return fail('its /status answer is not JSON');
  }
  io.stdout.write(flags.json ? `${JSON.stringify(doc)}\n` : formatStatus(doc));
  return EXIT.ok;
}
