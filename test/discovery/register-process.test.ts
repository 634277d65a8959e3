// `kv-dc-relay register` as a real process against a real etcd: it writes the worker entry under a
// lease; SIGTERM revokes it at once; a killed process's entry disappears when the lease expires; a
// bad worker entry is a one-line error and exit 2.
import { Etcd3 } from 'etcd3';
import { workerKey } from '../../src/discovery/keys';
import { runCli, spawnCli } from '../support/cli-process';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { waitFor } from '../support/waitFor';

const PREFIX = 'kv-dc-relay/reg';
const TRIPLE = { namespace: 'prod', component: 'backend', endpoint: 'generate' };
const KEY = workerKey(`${PREFIX}/`, TRIPLE, 7n);
const WORKER = JSON.stringify({ id: 7, kvEvents: { endpoint: 'tcp://127.0.0.1:5557' } });

describeWithEtcd('kv-dc-relay register', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  beforeAll(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
  });
  const children: ReturnType<typeof spawnCli>[] = [];
  afterAll(async () => {
    // A failed test must not leave a sidecar retrying against a stopped etcd.
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    kv.close();
    await etcd.stop();
  });

  const args = (ttl: number): string[] =>
    ['register', '--etcd', etcd.endpoint, '--prefix', PREFIX, '--namespace', 'prod', '--component', 'backend', '--endpoint', 'generate', '--worker', WORKER, '--ttl', String(ttl)];

  async function registered(): Promise<ReturnType<typeof spawnCli>> {
    const child = spawnCli(args(2));
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`register exited ${child.exitCode}: ${stderr}`);
      return stderr.includes('"msg":"worker registered"');
    }, 'the registration', 20_000, 50);
    expect(JSON.parse((await kv.get(KEY).string())!)).toEqual(JSON.parse(WORKER));
    return child;
  }

  test('SIGTERM deregisters at once and exits 0', async () => {
    const child = await registered();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await kv.get(KEY).string()).toBeNull();
  });

  test('a killed sidecar’s entry expires with its lease', async () => {
    const child = await registered();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    expect(await kv.get(KEY).string()).not.toBeNull();
    await waitFor(async () => (await kv.get(KEY).string()) === null, 'the lease to expire', 10_000, 50);
    expect(Date.now() - killedAt).toBeLessThan(2_000 + 3_000);
  });

  test('an invalid worker entry is one error line and exit 2', async () => {
    const bad = args(2);
    bad[bad.indexOf('--worker') + 1] = '{"id":7,"dpSize":0}';
    const r = await runCli(bad);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/^worker: dpSize: /);
    expect(await kv.get(KEY).string()).toBeNull();
  });
});
