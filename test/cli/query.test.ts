// `query` against a real relay over loopback: per-pool depths for prompts whose hashes the test
// published itself.
import { mkdtemp, rm, writeFile } from 'fs/promises';
import { tmpdir } from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import { main } from '../../src/cli/main';
import { parseTokens } from '../../src/cli/query';
import { DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { ckfPrepare, saltSeed, sequenceHashes } from '../../src/native/hashing';
import type { RelayServer } from '../../src/transport/server';
import { TestSource, testDescriptor, testProducer } from '../support/test-source';
import { startRelay, testClient } from '../client/helpers';
import { waitFor } from '../support/waitFor';

function capture(): { out: PassThrough; text: () => string } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return { out, text: () => text };
}

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const code = await main(['query', ...argv], { stdout: stdout.out, stderr: stderr.out });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('kv-dc-relay query', () => {
  const tokens = Array.from({ length: 64 * 4 + 3 }, (_, i) => 7 * i + 1);
  let server: RelayServer;
  let dir: string;
  let feed: ReturnType<TestSource['attachPool']>;
  const hashes = sequenceHashes(Uint32Array.from(tokens), 64, false, saltSeed(null, null));
  /** Marks block `i` of `tokens` as cached (each block's a-bucket has slot 3 free). */
  const store = (i: number): void => {
    const p = ckfPrepare(hashes[i], 256, DEFAULT_CKF_SEED);
    feed.publish([[p.bucketA, feed.words[p.bucketA] | (BigInt(p.fingerprint) << 48n)]]);
  };

  beforeAll(async () => {
    const source = new TestSource();
    // testDescriptor: model llama (alias chat), block size 64, standard hashing.
    // Plus a LoRA adapter on llama, so that an unknown adapter can be told from a served one.
    const producer = testProducer({ pool: 1, bucketCount: 256 });
    const descriptor = testDescriptor(producer);
    descriptor.registrations.push({ canonicalModelId: 'sql', target: { lora: { baseModel: 'llama', adapter: 'sql-lora' } }, aliases: [] });
    feed = source.attachPool(producer, descriptor);
    // Blocks 0 and 1 only (before any subscriber, so they arrive in the snapshot at sequence 0): the
    // matched prefix is 2 blocks = 128 tokens. Their a-buckets differ, so slot 3 is free in each.
    store(0);
    store(1);
    server = await startRelay(source);
    dir = await mkdtemp(path.join(tmpdir(), 'kv-query-'));
  });

  afterAll(async () => {
    await server.shutdown();
    await rm(dir, { recursive: true, force: true });
  });

  it('prints per-pool depth as JSON', async () => {
    const { code, stdout } = await run([server.address, '--model', 'chat', '--tokens', tokens.join(','), '--json']);
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.binding).toEqual({ canonicalModelId: 'llama', baseModel: 'llama' });
    expect(result.pools).toHaveLength(1);
    expect(result.pools[0]).toMatchObject({ endpoint: 'dynamo.backend.generate', queryBlocks: 4, matchedBlocks: 2, matchedTokens: 128, replicaSequence: '0' });
  });

  it('reads tokens from a file and prints a human-readable line', async () => {
    const file = path.join(dir, 'tokens.txt');
    await writeFile(file, `${tokens.join(' ')}\n`);
    const { code, stdout } = await run([server.address, '--model', 'llama', '--tokens-file', file]);
    expect(code).toBe(0);
    expect(stdout).toContain('dynamo.backend.generate  depth 2/4 blocks = 128 tokens');
  });

  it('exits 1 for a model the catalog does not serve, naming what it serves', async () => {
    const { code, stdout } = await run([server.address, '--model', 'mistral', '--tokens', '1,2,3', '--json']);
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toEqual({ model: 'mistral', error: 'unknownModel', served: [{ model: 'llama', aliases: ['chat'], adapters: ['sql-lora'] }] });
    const text = await run([server.address, '--model', 'mistral', '--tokens', '1,2,3']);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe('model "mistral" is not served by any pool in the catalog; served: llama (aliases chat)\n');
  });

  it('exits 1 for a LoRA adapter not served on the model, naming the adapters that are', async () => {
    const { code, stdout } = await run([server.address, '--model', 'chat', '--lora', 'nope', '--tokens', tokens.join(',')]);
    expect(code).toBe(1);
    expect(stdout).toBe('LoRA adapter "nope" is not served on llama; adapters served on llama: sql-lora\n');
    const json = await run([server.address, '--model', 'chat', '--lora', 'nope', '--tokens', tokens.join(','), '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ model: 'chat', lora: 'nope', error: 'unknownAdapter', binding: { baseModel: 'llama' } });
    // A served adapter answers with its pool.
    const served = await run([server.address, '--model', 'chat', '--lora', 'sql-lora', '--tokens', tokens.join(','), '--json']);
    expect(served.code).toBe(0);
    expect(JSON.parse(served.stdout).pools).toHaveLength(1);
  });

  it.each([
    [[]],
    [['h:1', '--tokens', '1']],
    [['h:1', '--model', 'm']],
    [['h:1', '--model', 'm', '--tokens', '1', '--tokens-file', 'f']],
    [['h:1', '--model', 'm', '--tokens', '1,x']],
    [['h:1', '--model', 'm', '--tokens', '1', '--timeout-ms', '0']],
  ])('exits 2 on bad usage %j', async (argv) => {
    const { code, stderr } = await run(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^kv-dc-relay query: .* \(see kv-dc-relay query --help\)\n$/);
  });

  // Runs last: it moves the pool past sequence 0.
  it('answers with the deltas published after the shared snapshot it was given', async () => {
    // A subscriber that stays makes the hub keep its sequence-0 snapshot and the delta after it; the
    // query is given that snapshot and the delta right behind it, and must answer after both.
    const holder = testClient(server.address, { subscriberId: 'holder' });
    try {
      holder.start();
      await waitFor(() => holder.replica(holder.catalog()?.pools[0]?.poolKey ?? '') !== undefined, 'the holder replica');
      store(2);
      await waitFor(() => holder.replica(holder.catalog()!.pools[0].poolKey)!.sequence === 1n, 'the delta');
      const { code, stdout } = await run([server.address, '--model', 'chat', '--tokens', tokens.join(','), '--json']);
      expect(code).toBe(0);
      expect(JSON.parse(stdout).pools[0]).toMatchObject({ matchedBlocks: 3, replicaSequence: '1' });
    } finally {
      holder.close();
    }
  });

  it('parses comma, whitespace and JSON token lists and rejects non-u32 ids', () => {
    expect(parseTokens('1,2, 3\n4')).toEqual([1, 2, 3, 4]);
    expect(parseTokens('[5, 6]')).toEqual([5, 6]);
    expect(parseTokens('4294967295')).toEqual([4294967295]);
    expect(() => parseTokens('4294967296')).toThrow('invalid token id');
    expect(() => parseTokens('-1')).toThrow('invalid token id');
    expect(() => parseTokens('1.5')).toThrow('invalid token id');
    expect(() => parseTokens('  ')).toThrow('no tokens');
  });
});
