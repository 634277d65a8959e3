// Per-publisher order of Dynamo's event plane (src/dynamo/event-plane/order.ts): the next sequence is
// delivered, a duplicate or reordered one dropped, a gap resets every source the publisher fed, a
// source fed by a new publisher (a restarted publisher) is reset, and the remembered publishers are bounded.
import { PublisherOrder } from '../../src/dynamo/event-plane/order';
import type { SourceKey } from '../../src/ingest/types';

function setup(max = 16) {
  const gaps: [string, number][] = [];
  const resets: [string, string][] = [];
  const order = new PublisherOrder(
    { gap: (p, n) => gaps.push([p, n]), reset: (s, r) => resets.push([`${s.workerId}:${s.dpRank}`, r]) },
    max,
  );
  return { order, gaps, resets };
}
const S = (w: number, r = 0): SourceKey => ({ workerId: BigInt(w), dpRank: r });

test('contiguous sequences from 0 are delivered with no gap or reset', () => {
  const { order, gaps, resets } = setup();
  expect([0, 1, 2, 3].map((q) => order.accept('p', q, S(1)))).toEqual(['deliver', 'deliver', 'deliver', 'deliver']);
  expect(gaps).toEqual([]);
  expect(resets).toEqual([]);
});

test('a duplicate or reordered envelope is dropped; the stream goes on', () => {
  const { order, resets } = setup();
  order.accept('p', 0, S(1));
  order.accept('p', 1, S(1));
  expect(order.accept('p', 1, S(1))).toBe('duplicate');
  expect(order.accept('p', 0, S(1))).toBe('duplicate');
  expect(order.accept('p', 2, S(1))).toBe('deliver');
  expect(resets).toEqual([]);
});

test('a gap resets every source the publisher fed, then delivers', () => {
  const { order, gaps, resets } = setup();
  order.accept('p', 0, S(1, 0));
  order.accept('p', 1, S(1, 1));
  order.accept('q', 0, S(2));
  expect(order.accept('p', 5, S(1, 0))).toBe('deliver');
  expect(gaps).toEqual([['p', 3]]);
  expect(resets.sort()).toEqual([['1:0', 'gap'], ['1:1', 'gap']]);
  // A reordered message behind the gap is dropped (no reorder buffer, as on the vLLM path).
  expect(order.accept('p', 4, S(1, 0))).toBe('duplicate');
});

test("a publisher's first message above 0 counts a gap but resets nothing", () => {
  const { order, gaps, resets } = setup();
  expect(order.accept('p', 7, S(1))).toBe('deliver');
  expect(gaps).toEqual([['p', 7]]);
  expect(resets).toEqual([]);
});

test('a source fed by a new publisher is reset first (the worker restarted its publisher)', () => {
  const { order, resets } = setup();
  order.accept('old', 0, S(1));
  order.accept('old', 1, S(1));
  expect(order.accept('new', 0, S(1))).toBe('deliver');
  expect(resets).toEqual([['1:0', 'restart']]);
  // The old publisher no longer feeds it: its gap does not reset it again.
  order.accept('old', 9, S(3));
  expect(resets).toEqual([['1:0', 'restart']]);
});

test('remembered publishers are bounded: the longest idle is forgotten', () => {
  const { order } = setup(2);
  order.accept('a', 0, S(1));
  order.accept('b', 0, S(2));
  order.accept('a', 1, S(1));
  order.accept('c', 0, S(3));
  expect(order.publisherCount).toBe(2);
  // 'b' was forgotten: its next message starts it afresh (a gap is counted, nothing dropped).
  expect(order.accept('b', 1, S(2))).toBe('deliver');
});

test('a publisher with messages since the clock last passed it is kept over one without (second chance), and the bound holds', () => {
  const { order, gaps } = setup(3);
  const sent: [string, number, number][] = [['a', 0, 1], ['b', 0, 2], ['c', 0, 3], ['a', 1, 1], ['c', 1, 3], ['d', 0, 4], ['a', 2, 1], ['c', 2, 3], ['b', 1, 2]];
  for (const [p, q, w] of sent) order.accept(p, q, S(w));
  // 'b' had no message since it came when 'd' needed room: it was forgotten and starts afresh above 0;
  // 'a' and 'c' were kept (their next messages are no gaps).
  expect(gaps).toEqual([['b', 1]]);
  for (let i = 0; i < 100; i++) order.accept(`p${i}`, 0, S(10 + i));
  expect(order.publisherCount).toBe(3);
});
