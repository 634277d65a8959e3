// The NATS suites: where the nats-server binary is missing they are skipped with a loud message
// rather than failing for the machine's sake (etcd.ts does the same for etcd).
import { NATS_BINARY, natsAvailable } from './nats-server';
import { etcdAvailable } from './etcd-server';

export { NatsServer } from './nats-server';

/** `describe` where nats-server and etcd run here; elsewhere a skipped suite and a warning naming the reason. */
export function describeWithNatsAndEtcd(name: string, body: () => void): void {
  if (natsAvailable && etcdAvailable) {
    describe(name, body);
    return;
  }
  // eslint-disable-next-line no-console
  console.warn(`\n*** SKIPPED "${name}": nats-server (${NATS_BINARY}) or etcd is not installed; apt-get install nats-server etcd-server ***\n`);
  describe.skip(name, body);
}
