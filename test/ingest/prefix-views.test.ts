// PrefixViews: the views ingest hands on for a burst's arrays and a message at the receive arena's
// start, reused while their lengths recur, never a view of an array that was replaced.
import { PrefixViews } from '../../src/ingest/prefix-views';

test('a recurring length gets the same view: the first `length` elements of the array, as written now', () => {
  const array = new Uint32Array(16);
  const views = new PrefixViews<Uint32Array>();
  const first = views.of(array, 3);
  expect(first).toHaveLength(3);
  expect(views.of(array, 5)).toHaveLength(5);
  expect(views.of(array, 3)).toBe(first);
  array.set([7, 8, 9]);
  expect([...views.of(array, 3)]).toEqual([7, 8, 9]);
});

test('only the two most recent lengths are kept', () => {
  const array = new BigUint64Array(16);
  const views = new PrefixViews<BigUint64Array>();
  const one = views.of(array, 1);
  views.of(array, 2);
  views.of(array, 3);
  const again = views.of(array, 1);
  expect(again).not.toBe(one);
  expect(again).toHaveLength(1);
});

test('another array (a grown arena) never gets a view of the one before', () => {
  const views = new PrefixViews<Uint8Array>();
  const old = Uint8Array.of(1, 2, 3, 4);
  expect([...views.of(old, 2)]).toEqual([1, 2]);
  const grown = Uint8Array.of(5, 6, 7, 8, 9, 10, 11, 12);
  const view = views.of(grown, 2);
  expect([...view]).toEqual([5, 6]);
  expect(view.buffer).toBe(grown.buffer);
});

test('forget() lets go of the views kept (an outsized array given back is not held by them)', () => {
  const array = new Uint32Array(8);
  const views = new PrefixViews<Uint32Array>();
  const kept = views.of(array, 4);
  views.forget();
  expect(views.of(array, 4)).not.toBe(kept);
});
