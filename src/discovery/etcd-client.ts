// The etcd v3 client (npm etcd3 over the tree's @grpc/grpc-js) as the relay configures it: TLS and
// auth from the config, a deadline on every unary request, gRPC keepalive so a silent network loss
// ends the watch stream, and no retry or circuit breaker of its own: every caller here has its own
// backoff loop, and a breaker would keep failing fast for seconds after etcd came back.
import * as fs from 'fs';
import { noop } from 'cockatiel';
import { Etcd3, type IOptions } from 'etcd3';
import { ETCD_KEEPALIVE_MS, ETCD_REQUEST_TIMEOUT_MS } from '../config/defaults';
import type { EtcdDiscoveryConfig } from '../config/schema';

export type EtcdConnection = Pick<EtcdDiscoveryConfig, 'endpoints' | 'tls' | 'auth'>;

export function createEtcdClient(config: EtcdConnection): Etcd3 {
  const options: IOptions = {
    hosts: config.endpoints,
    dialTimeout: ETCD_REQUEST_TIMEOUT_MS,
    // Streams (watch, lease keepalive) live until cancelled; only unary requests get a deadline.
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + ETCD_REQUEST_TIMEOUT_MS }),
    grpcOptions: { 'grpc.keepalive_time_ms': ETCD_KEEPALIVE_MS, 'grpc.keepalive_timeout_ms': ETCD_REQUEST_TIMEOUT_MS },
    faultHandling: { host: () => noop, global: noop },
  };
  if (config.tls) {
    options.credentials = {
      rootCertificate: fs.readFileSync(config.tls.caFile),
      ...(config.tls.certFile ? { certChain: fs.readFileSync(config.tls.certFile), privateKey: fs.readFileSync(config.tls.keyFile!) } : {}),
    };
  }
  if (config.auth) options.auth = { username: config.auth.username, password: config.auth.password };
  return new Etcd3(options);
}

/** One line for logs: etcd3 errors carry the gRPC detail in `message`. */
export function etcdErrorText(err: unknown): string {
  return err instanceof Error ? err.message.replace(/\s+/g, ' ').trim() : String(err);
}
