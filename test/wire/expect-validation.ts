import type { WireErrorKind, WireValidation } from '../../src/wire/validation';

/** [mutation label, mutate, expected: 'ok' | [kind, unsupported, field?]] */
export type Case<T> = [string, (v: T) => void, 'ok' | [WireErrorKind, boolean, string?]];

export function mutated<T>(base: T, mutate: (v: T) => void): T {
  const copy = structuredClone(base);
  mutate(copy);
  return copy;
}

export function expectResult(result: WireValidation, expected: Case<unknown>[2]): void {
  if (expected === 'ok') {
    expect(result).toEqual({ ok: true });
    return;
  }
  const [kind, unsupported, field] = expected;
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect({ kind: result.error.kind, unsupported: result.error.unsupported }).toEqual({ kind, unsupported });
  if (field !== undefined) expect(result.error.field).toBe(field);
  expect(result.error.message.length).toBeGreaterThan(0);
}

/** Runs a validator over a case table, and checks it never mutates its input. */
export function runCases<T>(validate: (v: T) => WireValidation, base: () => T, cases: Case<T>[]): void {
  test.each(cases)('%s', (_label, mutate, expected) => {
    const input = mutated(base(), mutate);
    const before = structuredClone(input);
    expectResult(validate(input), expected);
    expect(input).toEqual(before);
  });
}
