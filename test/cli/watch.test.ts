// `watch` writes JSON lines when stdout is not a terminal, against a real relay over loopback.
import { PassThrough } from 'stream';
import { main } from '../../src/cli/main';
import { runWatch } from '../../src/cli/watch';
import type { RelayServer } from '../../src/transport/server';
import { ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import { TestSource, testPoolId, testProducer } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { startRelay } from '../client/helpers';

function capture(): { out: PassThrough; lines: () => Array<Record<string, unknown>> } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return {
    out,
    lines: () =>
      text
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('kv-dc-relay watch', () => {
  let server: RelayServer | undefined;
  afterEach(async () => {
    await server?.shutdown();
    server = undefined;
  });

  it('prints catalog, replica, readiness, load and error events as JSON lines when stdout is not a TTY', async () => {
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1, layoutGeneration: 3n }));
    source.poolLoadState = { pools: [{ producer: feed.producer, kvUsedBlocks: 5n, totalKvBlocks: 50n, kvObservedRanks: 1, kvExpectedRanks: 1 }] };
    source.setReadiness([
      {
        namespace: 'dynamo',
        canonicalModelId: 'llama',
        state: ServingReadinessState.READY,
        presentRoles: [WorkerRole.AGGREGATED],
        missingRoles: [],
        members: [{ endpoint: { namespace: 'dynamo', component: 'backend', endpoint: 'generate' }, roles: [WorkerRole.AGGREGATED], poolId: testPoolId(1) }],
        duplicateRoleEndpoints: [],
        legacyFallbackActive: false,
        adapters: [],
      },
    ]);
    server = await startRelay(source, { timing: { loadWindowMs: 20 } });
    const { out, lines } = capture();
    const abort = new AbortController();
    const done = runWatch({ address: server.address, out, signal: abort.signal, refreshMs: 20 });
    const types = () => new Set(lines().map((l) => l.type));
    try {
      await waitFor(() => ['catalog', 'replicaInstalled', 'readiness', 'load', 'replicas'].every((t) => types().has(t)), 'every kind of line');
      feed.publish([[1, 0x10001n]]);
      await waitFor(() => lines().some((l) => l.type === 'replicas' && (l.pools as Array<{ sequence: string }>)[0].sequence === '1'), 'replica stats after a delta');

      const catalog = lines().find((l) => l.type === 'catalog') as { revision: string; pools: Array<Record<string, unknown>> };
      expect(catalog.pools).toHaveLength(1);
      expect(catalog.pools[0]).toMatchObject({ endpoint: 'dynamo.backend.generate', layoutGeneration: '3', kvBlockSize: 64 });
      const readiness = lines().find((l) => l.type === 'readiness') as { entries: Array<Record<string, unknown>> };
      expect(readiness.entries[0]).toMatchObject({ model: 'llama', state: 'READY', presentRoles: ['AGGREGATED'] });
      const load = lines().find((l) => l.type === 'load' && (l.pools as unknown[]).length > 0) as { pools: Array<Record<string, unknown>> };
      expect(load.pools[0]).toMatchObject({ kvUsedBlocks: '5', totalKvBlocks: '50' });
      const replicas = lines().filter((l) => l.type === 'replicas').pop() as { pools: Array<Record<string, unknown>> };
      expect(replicas.pools[0]).toMatchObject({ ready: true, filledSlots: 2, totalSlots: 64, stream: 'open' });

      await server.shutdown();
      server = undefined;
      await waitFor(() => types().has('error') && types().has('replicaInvalidated'), 'errors after the relay went away');
      const error = lines().find((l) => l.type === 'error')!;
      expect(error).toEqual(expect.objectContaining({ plane: expect.any(String), reason: expect.any(String), next: 'retry' }));
    } finally {
      abort.abort();
      await done;
    }
  });

  it('redraws a text view in place on a terminal', async () => {
    const source = new TestSource();
    source.attachPool(testProducer({ pool: 1 }));
    server = await startRelay(source);
    const out = Object.assign(new PassThrough(), { isTTY: true });
    let text = '';
    out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const abort = new AbortController();
    const done = runWatch({ address: server.address, out, signal: abort.signal, refreshMs: 20, banner: 'demo banner' });
    try {
      await waitFor(() => /replica seq 0 {2}slots 0\/64/.test(text), 'a screen with the installed replica');
      const screens = text.split('\x1b[H\x1b[2J').filter((s) => s.length > 0);
      const last = screens[screens.length - 1];
      expect(last.startsWith('demo banner\nkv-dc-relay watch ')).toBe(true);
      expect(last).toContain('catalog revision 1');
      expect(last).toContain('dynamo.backend.generate  gen 1');
      expect(last).toContain('llama [chat]');
      expect(text).not.toMatch(/^\{/m);
    } finally {
      abort.abort();
      await done;
    }
  });

  it('rejects bad usage with exit code 2', async () => {
    const { out } = capture();
    const err = capture();
    expect(await main(['watch'], { stdout: out, stderr: err.out })).toBe(2);
    expect(await main(['watch', 'a:1', 'b:2'], { stdout: out, stderr: err.out })).toBe(2);
    expect(await main(['watch', 'a:1', '--bogus'], { stdout: out, stderr: err.out })).toBe(2);
  });
});
