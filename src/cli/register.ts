// `kv-dc-relay register`: an engine sidecar's registration of its worker in etcd (README
// "Discovery from etcd"). The worker entry is written under a lease that this process keeps alive
// until SIGINT/SIGTERM (then the lease is revoked and the worker leaves the deployment at once); if
// the process dies, the lease expires and the relay drops the worker within the TTL.
//
//   kv-dc-relay register (--config RELAY_CONFIG | --etcd HOST:PORT[,HOST:PORT...] --prefix PREFIX)
//       --namespace NS --component C --endpoint E --worker JSON|@FILE [--ttl SECONDS]
import * as fs from 'fs';
import { ConfigError } from '../config/errors';
import { loadConfigFile } from '../config/load';
import type { EtcdDiscoveryConfig } from '../config/schema';
import { WorkerRegistration } from '../discovery/register';
import { createLogger } from '../log';
import type { CliIo } from './io';
import { EXIT, parseRelayAddresses, UsageError } from './usage';

export interface RegisterFlags {
  config?: string;
  etcd?: string;
  prefix?: string;
  namespace: string;
  component: string;
  endpoint: string;
  worker: string;
  /** Lease TTL in seconds (program.ts bounds it). */
  ttl?: number;
}

/** Runs until SIGINT/SIGTERM (exit 0); a config or worker-entry error exits 2. */
export async function runRegister(flags: RegisterFlags, io: CliIo): Promise<number> {
  const { namespace, component, endpoint } = flags;
  if (flags.config === undefined && (flags.etcd === undefined || flags.prefix === undefined)) throw new UsageError('--config, or --etcd with --prefix, is required');
  if (flags.config !== undefined && flags.etcd !== undefined) throw new UsageError('give --config or --etcd, not both');
  const ttlSeconds = flags.ttl;
  let etcd: Pick<EtcdDiscoveryConfig, 'endpoints' | 'prefix' | 'tls' | 'auth'>;
  let registration: WorkerRegistration;
  const logger = createLogger();
  try {
    if (flags.config !== undefined) {
      const discovery = loadConfigFile(flags.config).discovery?.etcd;
      if (!discovery) throw new ConfigError(flags.config, 'discovery.etcd', 'required for register --config');
      etcd = discovery;
    } else {
      etcd = { endpoints: parseRelayAddresses(flags.etcd!), prefix: flags.prefix! };
    }
    const worker = readWorker(flags.worker);
    registration = new WorkerRegistration({
      etcd,
      prefix: etcd.prefix,
      endpoint: { namespace, component, endpoint },
      worker,
      ttlSeconds: ttlSeconds ?? (flags.config !== undefined ? (etcd as EtcdDiscoveryConfig).leaseTtlSeconds : undefined),
      logger,
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`${err.message}\n`);
      return EXIT.usage;
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
  return EXIT.ok;
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
