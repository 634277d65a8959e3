// Shared by the hashing / ckf / pool tests: vector loading and cross-realm error checks (jest runs
// tests in a vm context, so errors thrown by the addon are not `instanceof` the test's TypeError).
import * as fs from 'fs';
import * as path from 'path';

const VECTORS = path.resolve(__dirname, '..', '..', '..', 'shared', 'vectors');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function loadVector(name: string): any {
  return JSON.parse(fs.readFileSync(path.join(VECTORS, name), 'utf8'));
}

export function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected the call to throw');
}

/** Asserts fn throws an error named `name` ('TypeError', 'RangeError', 'Error') with `code` if given. */
export function expectThrows(fn: () => unknown, name: string, code?: string): void {
  const e = thrown(fn);
  expect(e.name).toBe(name);
  if (code !== undefined) expect(e.code).toBe(code);
}

/** One case of block_hashes.json. */
export interface BlockCase {
  name: string;
  tokens: number[];
  kv_block_size: number;
  hash_format: 'standard' | 'eagle';
  lora_name: string | null;
  cache_namespace: string | null;
  mm_infos: ({ mm_objects: { mm_hash: string; offsets?: number[][] }[] } | null)[] | null;
  block_hash_seed: string;
  expected_block_hashes: string[];
  expected_sequence_hashes: string[];
}
