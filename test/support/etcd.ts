// The etcd suites: where the etcd binary is missing they are skipped with a loud message rather
// than failing for the machine's sake.
import { ETCD_BINARY, etcdAvailable } from './etcd-server';

export { EtcdServer } from './etcd-server';

/** `describe` where etcd runs here; elsewhere a skipped suite and a warning naming the reason. */
export function describeWithEtcd(name: string, body: () => void): void {
  if (etcdAvailable) {
    describe(name, body);
    return;
  }
  // eslint-disable-next-line no-console
  console.warn(`\n*** SKIPPED "${name}": the etcd binary (${ETCD_BINARY}) is not installed; apt-get install etcd-server ***\n`);
  describe.skip(name, body);
}
