// `kv-dc-relay serve --dynamo-etcd ... --dynamo-nats ...`: a process whose config file holds only its
// dcId and bind serves a Dynamo deployment read from the flags' etcd and NATS.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Etcd3 } from 'etcd3';
import { connect } from '@nats-io/transport-node';
import { RelayClient } from '../../src/client';
import { loggedAddress, spawnCli } from '../support/cli-process';
import { DynamoWorker } from '../support/dynamo-worker';
import { EtcdServer } from '../support/etcd';
import { describeWithNatsAndEtcd, NatsServer } from '../support/nats';
import { waitFor } from '../support/waitFor';

describeWithNatsAndEtcd('serve --dynamo-etcd --dynamo-nats', () => {
  test('the flags alone make it a relay of the Dynamo deployment', async () => {
    const [etcd, nats] = await Promise.all([new EtcdServer().start(), new NatsServer().start()]);
    const kv = new Etcd3({ hosts: etcd.endpoint });
    const nc = await connect({ servers: nats.url });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-dynamo-flags-'));
    const file = path.join(dir, 'relay.json');
    fs.writeFileSync(file, JSON.stringify({ dcId: 'dc', bind: '127.0.0.1:0' }));
    const worker = await new DynamoWorker(kv, { namespace: 'ns', component: 'backend', card: { display_name: 'llama', kv_cache_block_size: 4, worker_type: 'aggregated', needs: [] }, transport: 'nats', nats: nc }).register();
    const child = spawnCli(['serve', '--config', file, '--dynamo-etcd', etcd.endpoint, '--dynamo-nats', nats.url, '--dynamo-namespaces', 'ns']);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    let client: RelayClient | undefined;
    try {
      await waitFor(() => child.exitCode !== null || loggedAddress(stderr, 'listening') !== undefined, 'the relay to listen', 40_000, 20);
      expect(child.exitCode).toBeNull();
      client = new RelayClient(loggedAddress(stderr, 'listening')!, { subscriberId: 'flags' });
      client.start();
      await waitFor(() => client!.catalog()?.pools[0]?.descriptor.servingEndpoint?.namespace === 'ns', 'the Dynamo pool in the catalog', 15_000);
      // The plane's thread says so on its own schedule: under load after the catalog arrived.
      await waitFor(() => stderr.includes('"msg":"connected to NATS"'), 'the relay to say it connected to NATS', 15_000);
    } finally {
      client?.close();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await worker.close();
      await nc.close();
      kv.close();
      await Promise.all([etcd.stop(), nats.stop()]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(child.exitCode).toBe(0);
  }, 90_000);
});
