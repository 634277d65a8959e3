// The real `kv-dc-relay watch` process with stdout on a pipe (not a TTY): JSON lines, and a clean
// exit 0 on SIGINT.
import { spawnCli } from '../support/cli-process';
import { TestSource, testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { startRelay } from '../client/helpers';

test('watch prints JSON lines on a pipe and exits 0 on SIGINT', async () => {
  const source = new TestSource();
  source.attachPool(testProducer({ pool: 1 }));
  const server = await startRelay(source);
  const child = spawnCli(['watch', server.address]);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const lines = () => stdout.split('\n').filter((l) => l.length > 0);
    // The statistics line is periodic; the replica may install after the first one on a loaded machine.
    const seen = (type: string) => lines().some((l) => l.includes(`"type":"${type}"`));
    await waitFor(() => seen('replicaInstalled') && seen('replicas'), 'an installed replica and a statistics line', 30_000);
    const parsed = lines().map((l) => JSON.parse(l) as { type: string });
    expect(parsed.map((l) => l.type)).toEqual(expect.arrayContaining(['catalog', 'readiness', 'load', 'replicaInstalled', 'replicas']));
    child.kill('SIGINT');
    expect(await exit).toBe(0);
    expect(stderr).toBe('');
  } finally {
    child.kill('SIGKILL');
    await server.shutdown();
  }
}, 60_000);
