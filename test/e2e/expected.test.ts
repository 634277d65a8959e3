// The e2e tests trust their own expected hashes (harness.ts); here they reproduce the golden vectors
// for every case in the scope they are used for: standard windows, LoRA salt, no namespace, no MM.
import * as fs from 'fs';
import * as path from 'path';
import { expectedHashes, loraSeed } from './harness';

const VECTORS = path.resolve(__dirname, '..', '..', '..', 'shared', 'vectors');
const load = <T>(file: string): T => JSON.parse(fs.readFileSync(path.join(VECTORS, file), 'utf8')) as T;

interface HashCase {
  name: string;
  tokens: number[];
  kv_block_size: number;
  hash_format: string;
  lora_name: string | null;
  cache_namespace: string | null;
  mm_infos: unknown;
  expected_sequence_hashes: string[];
}
interface SaltEntry {
  cache_namespace: string | null;
  lora_name: string | null;
  seed: string;
}

const inScope = (c: HashCase): boolean => !c.cache_namespace && c.mm_infos == null && c.kv_block_size > 0;
const allCases = load<{ cases: HashCase[] }>('block_hashes.json').cases.filter(inScope);
const cases = allCases.filter((c) => c.hash_format === 'standard');
const eagleCases = allCases.filter((c) => c.hash_format === 'eagle');
const salts = load<{ entries: SaltEntry[] }>('salt.json').entries.filter((e) => !e.cache_namespace);

test('the vectors leave enough cases in scope', () => {
  expect(cases.length).toBeGreaterThan(10);
  expect(eagleCases.length).toBeGreaterThanOrEqual(5);
  expect(cases.some((c) => c.lora_name)).toBe(true);
  expect(salts.some((e) => e.lora_name)).toBe(true);
});

test.each(cases.map((c) => [c.name, c] as const))('sequence hashes: %s', (_, c) => {
  expect(expectedHashes(c.tokens, c.lora_name, c.kv_block_size)).toEqual(c.expected_sequence_hashes.map(BigInt));
});

test.each(eagleCases.map((c) => [c.name, c] as const))('Eagle sequence hashes: %s', (_, c) => {
  expect(expectedHashes(c.tokens, c.lora_name, c.kv_block_size, undefined, true)).toEqual(c.expected_sequence_hashes.map(BigInt));
});

test.each(salts.map((e) => [JSON.stringify(e.lora_name), e] as const))('LoRA salt seed: %s', (_, e) => {
  expect(loraSeed(e.lora_name ?? undefined)).toBe(BigInt(e.seed));
});

test('a chain continued from a parent equals the chain of the whole prompt', () => {
  const prompt = Array.from({ length: 24 }, (_, i) => 7 * i);
  const whole = expectedHashes(prompt);
  expect(expectedHashes(prompt.slice(8), null, 4, whole[1])).toEqual(whole.slice(2));
});
