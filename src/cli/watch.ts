// `kv-dc-relay watch HOST:PORT`: a live consumer view. On a terminal the view is redrawn in place;
// otherwise every plane change, replica event and error is one JSON line (plus a periodic line of
// replica statistics), so the output can be piped into other tools.
import { QUERY_TIMEOUT_MS, WATCH_RECENT_ERRORS, WATCH_REFRESH_MS } from '../config/defaults';
import { RelayClient } from '../client';
import { catalogView, errorView, loadView, readinessView, replicaView, servingLoadView } from '../client/views';
import type { ClientTlsOptions } from '../security/client-tls';
import type { CliIo } from './io';
import { clientTls, connectionCause, EXIT, parseRelayAddress, type TlsOptionValues } from './usage';

export interface WatchOptions {
  address: string;
  subscriberId?: string;
  /** Force JSON lines even on a terminal. */
  json?: boolean;
  out: NodeJS.WritableStream & { isTTY?: boolean };
  /** Lines shown above the terminal view (the demo's config path); not printed as JSON lines. */
  banner?: string;
  /** Aborting ends the watch (SIGINT/SIGTERM in the CLI). */
  signal: AbortSignal;
  refreshMs?: number;
  /** TLS to the relay; plaintext when omitted. */
  tls?: ClientTlsOptions;
  /** With no catalog this long after start, `unreachable` gets one line naming the address and the cause. */
  timeoutMs?: number;
  unreachable?: (line: string) => void;
}

/** Runs until `signal` aborts. */
export async function runWatch(options: WatchOptions): Promise<void> {
  const client = new RelayClient(options.address, { subscriberId: options.subscriberId ?? 'kv-dc-relay-watch', ...(options.tls ? { tls: options.tls } : {}) });
  const refreshMs = options.refreshMs ?? WATCH_REFRESH_MS;
  const lines = options.json || !options.out.isTTY;
  const recentErrors: string[] = [];
  const line = (type: string, body: object) => options.out.write(`${JSON.stringify({ type, at: new Date().toISOString(), ...body })}\n`);
  let lastError: string | undefined;

  client.on('error', (e) => {
    lastError = e.message;
    if (lines) line('error', errorView(e));
    else {
      recentErrors.push(`${new Date().toISOString()} ${e.plane} ${e.reason}: ${e.message} (${e.next})`);
      if (recentErrors.length > WATCH_RECENT_ERRORS) recentErrors.shift();
    }
  });
  if (lines) {
    client.on('catalog', (c) => line('catalog', c ? catalogView(c) : { lost: true }));
    client.on('readiness', (r) => line('readiness', r ? readinessView(r) : { lost: true }));
    client.on('load', (l) => line('load', l ? loadView(client.catalog(), l) : { lost: true }));
    client.on('servingLoad', (l) => line('servingLoad', l ? servingLoadView(client.catalog(), l) : { lost: true }));
    client.on('replicaInstalled', (e) => line('replicaInstalled', { pool: e.poolKey, sequence: e.sequence.toString() }));
    client.on('replicaInvalidated', (e) => line('replicaInvalidated', { pool: e.poolKey, reason: e.reason, message: e.message }));
  }
  const tick = () => {
    if (lines) {
      const states = client.poolStates();
      if (states.length > 0) line('replicas', { pools: states.map(replicaView) });
    } else {
      options.out.write(`\x1b[H\x1b[2J${options.banner ? `${options.banner}\n` : ''}${renderWatchScreen(client, recentErrors)}`);
    }
  };
  client.start();
  const timer = setInterval(tick, refreshMs);
  const patience = setTimeout(() => {
    if (client.catalog() !== undefined) return;
    const cause = lastError === undefined ? 'no answer yet' : connectionCause(lastError);
    options.unreachable?.(`watch: no catalog from ${options.address} after ${options.timeoutMs ?? QUERY_TIMEOUT_MS} ms: ${cause} (still trying)`);
  }, options.timeoutMs ?? QUERY_TIMEOUT_MS);
  try {
    await new Promise<void>((resolve) => {
      if (options.signal.aborted) resolve();
      else options.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    clearInterval(timer);
    clearTimeout(patience);
    client.close();
  }
}

/** The terminal screen: catalog with producer generations, replicas, readiness, load, recent errors. */
export function renderWatchScreen(client: RelayClient, recentErrors: readonly string[]): string {
  const out: string[] = [`kv-dc-relay watch ${client.address}   ${new Date().toISOString()}`, ''];
  const catalog = client.catalog();
  if (!catalog) {
    out.push('catalog: (waiting)');
  } else {
    const view = catalogView(catalog);
    out.push(`catalog revision ${view.revision}  relay ${view.relay}  pools ${view.pools.length}  quarantined ${view.quarantined.length}`);
    const states = new Map(client.poolStates().map((s) => [s.pool.poolKey, replicaView(s)]));
    catalog.pools.forEach((pool, i) => {
      const p = view.pools[i];
      const r = states.get(pool.poolKey);
      const replica = r?.ready ? `seq ${r.sequence}  slots ${r.filledSlots}/${r.totalSlots}  ${r.deltasPerSecond} deltas/s` : `(${r?.stream ?? 'idle'})`;
      const models = p.models.map((m) => (m.aliases.length ? `${m.model} [${m.aliases.join(',')}]` : m.model)).join(' ');
      out.push(`  ${p.endpoint}  gen ${p.layoutGeneration} inc ${p.producerIncarnation}  bs ${p.kvBlockSize} ${p.hashFormat}  ${models}`);
      out.push(`      replica ${replica}`);
    });
    for (const q of view.quarantined) out.push(`  quarantined #${q.index} ${q.label}: ${q.message}`);
  }
  const readiness = client.readiness();
  out.push('', readiness ? `readiness revision ${readiness.revision}` : 'readiness: (waiting)');
  for (const e of readiness ? readinessView(readiness).entries : []) {
    const adapters = e.adapters.map((a) => ` ${a.model}=${a.state}`).join('');
    out.push(`  ${e.namespace}/${e.model}  ${e.state}  present [${e.presentRoles.join(',')}] missing [${e.missingRoles.join(',')}]${adapters}`);
  }
  const load = client.load();
  out.push('', load ? `load window ${load.windowSequence} (${load.windowMs} ms)` : 'load: (waiting)');
  for (const p of load ? loadView(catalog, load).pools : []) {
    out.push(`  ${p.endpoint}  kv ${p.kvUsedBlocks}/${p.totalKvBlocks} blocks  ranks ${p.kvObservedRanks}/${p.kvExpectedRanks}`);
  }
  const serving = client.servingLoad();
  if (serving) {
    const view = servingLoadView(catalog, serving);
    out.push('', `serving load window ${view.windowSequence}`);
    for (const p of view.pools) out.push(`  ${p.endpoint}  ${p.load?.status ?? '-'}  ${JSON.stringify(p.load?.tokens ?? {})}  live ${p.liveWorkers ?? '-'}`);
    for (const m of view.models) out.push(`  ${m.namespace}/${m.model}  ${m.load?.status ?? '-'}  frontends ${m.readyFrontends}/${m.observedFrontends}/${m.expectedFrontends}`);
  }
  if (recentErrors.length) out.push('', 'recent errors:', ...recentErrors.map((e) => `  ${e}`));
  return `${out.join('\n')}\n`;
}

export interface WatchFlags extends TlsOptionValues {
  subscriberId?: string;
  json?: boolean;
  timeoutMs: number;
}

/** `kv-dc-relay watch`: runs until SIGINT/SIGTERM (exit 0). */
export async function runWatchCommand(address: string, flags: WatchFlags, io: CliIo): Promise<number> {
  const tls = clientTls(flags);
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await runWatch({
      address: parseRelayAddress(address),
      subscriberId: flags.subscriberId,
      json: flags.json,
      out: io.stdout,
      signal: abort.signal,
      tls,
      timeoutMs: flags.timeoutMs,
      unreachable: (text) => io.stderr.write(`${text}\n`),
    });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return EXIT.ok;
}
