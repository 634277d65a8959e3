// `kv-dc-relay serve --config FILE [--bind HOST:PORT] [--dc-id ID]`: a relay process.
// (Options and help: program.ts.)
//
// Process contract (relay-config.md): JSON-lines logs on stderr, `{"msg":"listening","address":…}`
// once the gRPC and metrics listeners are bound; a config error is one line `FILE: field.path:
// problem` and exit 2; a listener that cannot bind (a port in use) is one line `kv-dc-relay serve:
// cannot listen on ADDRESS (gRPC|metrics): cause` and exit 1, before any engine was dialled;
// SIGINT/SIGTERM shut down (health NOT_SERVING, streams end, connections closed) and exit 0 within
// 5 s. The config file is watched; valid changes to `endpoints` apply live.
import * as v8 from 'v8';
import { EVENT_LOOP_SLICE_US, GC_HEAP_GROWING_PERCENT, SHUTDOWN_DEADLINE_MS } from '../config/defaults';
import { ConfigError } from '../config/errors';
import { createLogger } from '../log';
import { setThreadSlice } from '../native';
import { ListenError } from '../server/listen-error';
import { startRelay, type RunningRelay } from '../server/start-relay';
import type { CliIo } from './io';
import { EXIT } from './usage';

export interface ServeFlags {
  config: string;
  bind?: string;
  dcId?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsRequireClientCert?: boolean;
  dynamoEtcd?: string;
  dynamoNats?: string;
  dynamoNamespaces?: string;
}

/** A comma-separated flag value as a list (undefined when the flag is absent). */
const list = (v: string | undefined): string[] | undefined => v?.split(',').map((s) => s.trim()).filter((s) => s.length > 0);

/** `kv-dc-relay serve`: runs until SIGINT/SIGTERM (exit 0) or a transport failure (exit 1). */
export async function runServe(flags: ServeFlags, io: CliIo): Promise<number> {
  const logger = createLogger();
  // The process's own main thread, before the relay starts the threads that inherit it (ingest, ZMQ
  // I/O): an embedder's startRelay() leaves its threads' scheduling alone.
  const sliced = setThreadSlice(EVENT_LOOP_SLICE_US);
  // Process-wide like the slice, so here and not in startRelay(): an embedder's heap is its own.
  v8.setFlagsFromString(`--heap-growing-percent=${GC_HEAP_GROWING_PERCENT}`);
  // Installed before starting, so a signal during startup still ends in an orderly shutdown.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  let relay: RunningRelay;
  try {
    const tls = { cert: flags.tlsCert, key: flags.tlsKey, ca: flags.tlsCa, requireClientCert: flags.tlsRequireClientCert };
    const dynamo = { etcd: list(flags.dynamoEtcd), nats: list(flags.dynamoNats), namespaces: list(flags.dynamoNamespaces) };
    relay = await startRelay({ configFile: flags.config, overrides: { bind: flags.bind, dcId: flags.dcId, tls, dynamo }, logger });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`${err.message}\n`);
      return EXIT.usage;
    }
    if (err instanceof ListenError) {
      io.stderr.write(`kv-dc-relay serve: ${err.message}\n`);
      return EXIT.failure;
    }
    logger.fatal({ err: (err as Error).message }, 'relay failed to start');
    return EXIT.failure;
  }
  logger.info({ sliceUs: EVENT_LOOP_SLICE_US, applied: sliced }, 'scheduler slice');
  logger.info({ heapGrowingPercent: GC_HEAP_GROWING_PERCENT }, 'heap growing factor');
  // A transport failure was logged where it happened; it stops the relay like a signal, but exits 1.
  const signal = await Promise.race([signalled, relay.failed.then(() => undefined)]);
  if (signal) logger.info({ signal }, 'signal received');
  const code = signal ? EXIT.ok : EXIT.failure;
  // The contract bounds shutdown; a stuck close must not keep the process alive past it.
  const deadline = setTimeout(() => {
    logger.error({}, 'shutdown deadline passed; exiting');
    process.exit(code);
  }, SHUTDOWN_DEADLINE_MS - 500);
  deadline.unref();
  await relay.shutdown();
  clearTimeout(deadline);
  return code;
}
