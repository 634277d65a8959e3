// End to end: a simulated vLLM engine publishes KV events over ZMQ to a relay started as `serve`
// starts it; the consumer library and the real `kv-dc-relay query` process then report the matched
// prefix of a prompt whose first blocks the engine stored.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { RelayClient } from '../../src/client';
import { startRelay, type RunningRelay } from '../../src/server';
import { silentLogger } from '../../src/log';
import { SimulatedEngine } from '../../src/sim';
import { runCli } from '../support/cli-process';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

describe('query end to end', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-query-'));
  let engine: SimulatedEngine | undefined;
  let relay: RunningRelay | undefined;
  let client: RelayClient | undefined;

  afterAll(async () => {
    client?.close();
    await relay?.shutdown();
    await engine?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reports the blocks the engine stored, through the library and the CLI process', async () => {
    engine = await new SimulatedEngine({ modelName: 'llama' }).start();
    const file = path.join(dir, 'relay.json');
    const adapters = [{ name: 'tenant-a', servedModel: 'llama-tenant-a', workers: [7] }];
    fs.writeFileSync(file, JSON.stringify(relayConfig([endpointConfig([workerConfig(7, engine)], { model: { aliases: ['chat'] }, adapters })])));
    relay = await startRelay({ configFile: file, logger: silentLogger });
    await engine.waitForSubscribers();

    // The engine stores blocks 0..2 of a 5-block prompt (block 1 and 2 as children of their parents).
    const prompt = Array.from({ length: 5 * BS + 2 }, (_, i) => 100 + i);
    await engine.publish([{ type: 'BlockStored', blockHashes: [501n, 502n], parentBlockHash: null, tokenIds: prompt.slice(0, 2 * BS), blockSize: BS }]);
    await engine.publish([{ type: 'BlockStored', blockHashes: [503n], parentBlockHash: 502n, tokenIds: prompt.slice(2 * BS, 3 * BS), blockSize: BS }]);
    // The same prompt's first block under the LoRA adapter lands in the LoRA (salted) hash space.
    await engine.publish([{ type: 'BlockStored', blockHashes: [601n], parentBlockHash: null, tokenIds: prompt.slice(0, BS), blockSize: BS, loraName: 'tenant-a' }]);

    client = new RelayClient(relay.address, { subscriberId: 'e2e' });
    client.start();
    const depth = () => {
      const r = client!.query({ model: 'chat', tokens: prompt });
      return r.kind === 'ok' ? r.pools[0]?.matchedBlocks : undefined;
    };
    await waitFor(() => depth() === 3, 'the library to see 3 matched blocks', 10_000);
    const loraDepth = () => {
      const r = client!.query({ model: 'llama-tenant-a', tokens: prompt });
      return r.kind === 'ok' ? r.pools[0]?.matchedBlocks : undefined;
    };
    await waitFor(() => loraDepth() === 1, 'the LoRA prefix', 10_000);
    const viaAdapter = client.query({ model: 'llama', lora: 'tenant-a', tokens: prompt });
    expect(viaAdapter.kind === 'ok' && viaAdapter.pools.map((p) => p.matchedBlocks)).toEqual([1]);

    const { code, stdout, stderr } = await runCli(['query', relay.address, '--model', 'llama', '--tokens', prompt.join(','), '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.pools).toHaveLength(1);
    expect(result.pools[0]).toMatchObject({ endpoint: 'prod.backend.generate', queryBlocks: 5, matchedBlocks: 3, matchedTokens: 12, readiness: 'READY' });
  }, 30_000);
});
