// `kv-dc-relay register`: an engine sidecar's registration of its worker in etcd (README
// "Discovery from etcd"). The worker entry is written under a lease that this process keeps alive
// until SIGINT/SIGTERM (then the lease is revoked and the worker leaves the deployment at once); if
// the process dies, the lease expires and the relay drops the worker within the TTL.
//
//   kv-dc-relay register (--config RELAY_CONFIG | --etcd HOST:PORT[,HOST:PORT...] --prefix PREFIX)
//       --namespace NS --component C --endpoint E --worker JSON|@FILE [--ttl SECONDS]
import * as fs from 'fs';
import { parseArgs } from 'util';
import { ConfigError } from '../config/errors';
import { loadConfigFile } from '../config/load';
import { MAX_ETCD_LEASE_TTL_S, MIN_ETCD_LEASE_TTL_S } from '../config/limits';
import type { EtcdDiscoveryConfig } from '../config/schema';
import { WorkerRegistration } from '../discovery/register';
import { createLogger } from '../log';

export const REGISTER_USAGE =
  'usage: kv-dc-relay register (--config RELAY_CONFIG | --etcd HOST:PORT[,...] --prefix PREFIX) --namespace NS --component C --endpoint E --worker JSON|@FILE [--ttl SECONDS]';

const OPTIONS = {
  config: { type: 'string' },
  etcd: { type: 'string' },
  prefix: { type: 'string' },
  namespace: { type: 'string' },
  component: { type: 'string' },
  endpoint: { type: 'string' },
  worker: { type: 'string' },
  ttl: { type: 'string' },
} as const;

/** Runs until SIGINT/SIGTERM (exit 0); a usage, config or worker-entry error exits 2. */
export async function registerCommand(argv: string[]): Promise<number> {
  const usage = (problem: string): number => {
    process.stderr.write(`${problem}\n${REGISTER_USAGE}\n`);
    return 2;
  };
  let values: { [K in keyof typeof OPTIONS]?: string };
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    return usage((err as Error).message);
  }
  const { namespace, component, endpoint } = values;
  if (namespace === undefined || component === undefined || endpoint === undefined) return usage('--namespace, --component and --endpoint are required');
  if (values.worker === undefined) return usage('--worker is required');
  const ttlSeconds = values.ttl === undefined ? undefined : Number(values.ttl);
  if (ttlSeconds !== undefined && !(Number.isInteger(ttlSeconds) && ttlSeconds >= MIN_ETCD_LEASE_TTL_S && ttlSeconds <= MAX_ETCD_LEASE_TTL_S)) {
    return usage(`--ttl must be an integer number of seconds in ${MIN_ETCD_LEASE_TTL_S}..${MAX_ETCD_LEASE_TTL_S}`);
  }

  let etcd: Pick<EtcdDiscoveryConfig, 'endpoints' | 'prefix' | 'tls' | 'auth'>;
  let registration: WorkerRegistration;
  const logger = createLogger();
  try {
    if (values.config !== undefined) {
      const discovery = loadConfigFile(values.config).discovery?.etcd;
      if (!discovery) throw new ConfigError(values.config, 'discovery.etcd', 'required for register --config');
      etcd = discovery;
    } else if (values.etcd !== undefined && values.prefix !== undefined) {
      etcd = { endpoints: values.etcd.split(','), prefix: values.prefix };
    } else {
      return usage('--config, or --etcd with --prefix, is required');
    }
    const worker = readWorker(values.worker);
    registration = new WorkerRegistration({
      etcd,
      prefix: etcd.prefix,
      endpoint: { namespace, component, endpoint },
      worker,
      ttlSeconds: ttlSeconds ?? (values.config !== undefined ? (etcd as EtcdDiscoveryConfig).leaseTtlSeconds : undefined),
      logger,
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  void registration.start();
  const signal = await signalled;
  logger.info({ signal }, 'signal received; deregistering');
  await registration.close();
  return 0;
}

/** The worker entry from inline JSON or `@FILE`. */
function readWorker(arg: string): unknown {
  const source = arg.startsWith('@') ? arg.slice(1) : '--worker';
  let text = arg;
  if (arg.startsWith('@')) {
    try {
      text = fs.readFileSync(source, 'utf8');
    } catch (err) {
      throw new ConfigError(source, '(file)', `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(source, '(root)', `invalid JSON: ${(err as Error).message}`);
  }
}
