// "One relay against one engine" as a newcomer runs it: `kv-dc-relay sim-engine` in a process of its
// own prints the worker entry of the engine it simulates; a relay config made from that entry, served
// by `kv-dc-relay serve`, tracks the engine's KV events, and `kv-dc-relay query` finds the prefix of
// the prompt sim-engine wrote cached. SIGTERM stops sim-engine with exit 0.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';
import { parse, stringify } from 'yaml';
import { workloadPacing } from '../../src/cli/sim-engine';
import { loggedAddress, runCli, spawnCli } from '../support/cli-process';
import { waitForValue } from '../support/waitFor';

test('workloadPacing publishes the asked rate', () => {
  expect(workloadPacing(20)).toEqual({ intervalMs: 50, stepsPerTick: 1 });
  expect(workloadPacing(1)).toEqual({ intervalMs: 1000, stepsPerTick: 1 });
  expect(workloadPacing(5000)).toEqual({ intervalMs: 1, stepsPerTick: 5 });
});

test('sim-engine feeds a relay started from its printed config; query finds the prompt cached', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-sim-engine-'));
  const promptFile = path.join(dir, 'prompt.txt');
  const printed = await runCli(['sim-engine', '--seed', '7', '--print-prompt']);
  expect(printed.code).toBe(0);
  expect(printed.stdout).toMatch(/^\d+(,\d+)+\n$/);
  fs.writeFileSync(promptFile, printed.stdout);
  const engine = spawnCli(['sim-engine', '--port', '0', '--replay-port', '0', '--http-port', '0', '--rate', '200', '--seed', '7']);
  const relayExit: Promise<number | null>[] = [];
  let relay: ReturnType<typeof spawnCli> | undefined;
  try {
    let entry = '';
    engine.stdout!.on('data', (b: Buffer) => (entry += b.toString()));
    const workers = await waitForValue(() => {
      try {
        const parsed = parse(entry) as unknown;
        return Array.isArray(parsed) && parsed.length === 1 ? (parsed as Record<string, unknown>[]) : undefined;
      } catch {
        return undefined;
      }
    }, 'the worker entry on stdout', 30_000, 20);
    expect(workers[0]).toMatchObject({ id: 1, kvEvents: { mode: 'connect', endpoint: expect.stringMatching(/^tcp:\/\/127\.0\.0\.1:\d+$/) } });

    const config = path.join(dir, 'relay.yaml');
    fs.writeFileSync(
      config,
      stringify({
        dcId: 'dc-walkthrough',
        bind: '127.0.0.1:0',
        endpoints: [{ namespace: 'demo', component: 'backend', endpoint: 'generate', model: { name: 'llama', kvBlockSize: 16 }, workers }],
      }),
    );
    relay = spawnCli(['serve', '--config', config]);
    relayExit.push(new Promise((resolve) => relay!.on('exit', resolve)));
    let log = '';
    readline.createInterface({ input: relay.stderr! }).on('line', (l) => (log += `${l}\n`));
    const address = await waitForValue(() => loggedAddress(log, 'listening'), 'the relay to listen', 30_000, 20);

    const answer = await waitForValue(
      async () => {
        const q = await runCli(['query', address, '--model', 'llama', '--tokens-file', promptFile, '--json']);
        if (q.code !== 0) return undefined;
        const pools = (JSON.parse(q.stdout) as { pools: { matchedBlocks: number | null }[] }).pools;
        return pools.length === 1 && (pools[0].matchedBlocks ?? 0) > 0 ? pools[0] : undefined;
      },
      'query to find the shared system prompt cached',
      60_000,
      200,
    );
    // System prompts are 4 blocks of 16 tokens by default; the prompt adds 3 tokens of its own.
    expect(answer.matchedBlocks).toBe(4);

    const engineExit = new Promise<number | null>((resolve) => engine.on('exit', resolve));
    engine.kill('SIGTERM');
    expect(await engineExit).toBe(0);
  } finally {
    relay?.kill('SIGTERM');
    await Promise.all(relayExit);
    engine.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
