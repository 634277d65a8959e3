// `kv-dc-relay serve --config FILE [--bind HOST:PORT] [--dc-id ID]`: a relay process.
//
// Process contract (relay-config.md): JSON-lines logs on stderr, `{"msg":"listening","address":…}`
// once the gRPC listener is bound; a config error is one line `FILE: field.path: problem` and exit
// 2; SIGINT/SIGTERM shut down (health NOT_SERVING, streams end, connections closed) and exit 0
// within 5 s. The config file is watched; valid changes to `endpoints` apply live.
import { parseArgs } from 'util';
import * as v8 from 'v8';
import { EVENT_LOOP_SLICE_US, GC_HEAP_GROWING_PERCENT, SHUTDOWN_DEADLINE_MS } from '../config/defaults';
import { ConfigError } from '../config/errors';
import { createLogger } from '../log';
import { setThreadSlice } from '../native';
import { startRelay, type RunningRelay } from '../server/start-relay';

export const SERVE_USAGE =
  'usage: kv-dc-relay serve --config FILE [--bind HOST:PORT] [--dc-id ID] [--tls-cert FILE --tls-key FILE [--tls-ca FILE] [--tls-require-client-cert]]';

/** The `serve` subcommand: runs until SIGINT/SIGTERM (exit 0) or a transport failure (exit 1). */
export async function serveCommand(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseServeArgs>;
  try {
    values = parseServeArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${SERVE_USAGE}\n`);
    return 2;
  }
  if (values.config === undefined) {
    process.stderr.write(`--config is required\n${SERVE_USAGE}\n`);
    return 2;
  }
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
    const tls = { cert: values['tls-cert'], key: values['tls-key'], ca: values['tls-ca'], requireClientCert: values['tls-require-client-cert'] };
    relay = await startRelay({ configFile: values.config, overrides: { bind: values.bind, dcId: values['dc-id'], tls }, logger });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    logger.fatal({ err: (err as Error).message }, 'relay failed to start');
    return 1;
  }
  logger.info({ sliceUs: EVENT_LOOP_SLICE_US, applied: sliced }, 'scheduler slice');
  logger.info({ heapGrowingPercent: GC_HEAP_GROWING_PERCENT }, 'heap growing factor');
  // A transport failure was logged where it happened; it stops the relay like a signal, but exits 1.
  const signal = await Promise.race([signalled, relay.failed.then(() => undefined)]);
  if (signal) logger.info({ signal }, 'signal received');
  const code = signal ? 0 : 1;
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

function parseServeArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      bind: { type: 'string' },
      'dc-id': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-ca': { type: 'string' },
      'tls-require-client-cert': { type: 'boolean' },
    },
    strict: true,
    allowPositionals: false,
  }).values;
}
