// `npm start` as a newcomer runs it: the demo relay comes up on 127.0.0.1:5561, a consumer sees a
// non-empty catalog and live deltas, the prompt the banner suggests finds its cached prefix, and
// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops everything cleanly.
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { RelayClient } from '../../src/client';
import { DEMO_BIND } from '../../src/cli/demo';
import { waitForValue } from '../support/waitFor';

const ROOT = path.resolve(__dirname, '..', '..');

test('npm start: catalog, deltas, clean stop on Ctrl-C', async () => {
  const child = spawn('npm', ['start', '--', '--json'], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  child.stdout.resume();
  // npm itself dies of the SIGINT; the demo's own output ends when the demo process has stopped.
  const demoEnded = new Promise<void>((resolve) => child.stderr.on('end', () => resolve()));
  const client = new RelayClient(DEMO_BIND, { subscriberId: 'npm-start-smoke-test' });
  try {
    const delta = new Promise<void>((resolve) => client.once('delta', () => resolve()));
    const catalog = new Promise<number>((resolve) =>
      client.on('catalog', (c) => {
        if (c && c.pools.length > 0) resolve(c.pools.length);
      }),
    );
    client.start();
    expect(await catalog).toBe(3);
    await delta;
    // The suggested prompt starts with a 4-block system prompt every conversation shares.
    const promptFile = /--tokens-file (\S+)/.exec(stderr)?.[1];
    expect(promptFile).toBeDefined();
    const tokens = fs.readFileSync(promptFile!, 'utf8').split(',').map(Number);
    const matched = await waitForValue(
      () => {
        const answer = client.query({ model: 'llama', tokens });
        const pool = answer.kind === 'ok' ? answer.pools[0] : undefined;
        return pool?.matchedBlocks === 4 ? pool.matchedTokens : undefined;
      },
      'the cached system prompt',
      30_000,
      50,
    );
    expect(matched).toBe(64);
  } finally {
    client.close();
  }
  process.kill(-child.pid!, 'SIGINT');
  await demoEnded;
  expect(stderr).toContain('kv-dc-relay demo: stopped');
}, 60_000);
