import { Permits, QueuedPermits } from '../../src/publication/permits';

test('Permits: try-acquire up to the limit, release once gives one back', () => {
  const p = new Permits(2);
  const a = p.tryAcquire()!;
  const b = p.tryAcquire()!;
  expect(p.tryAcquire()).toBeUndefined();
  a();
  a();
  expect(p.inUse).toBe(1);
  expect(p.tryAcquire()).toBeDefined();
  expect(p.tryAcquire()).toBeUndefined();
  b();
  expect(p.inUse).toBe(1);
});

test('QueuedPermits: waiters are served in order; an aborted waiter leaves the queue', async () => {
  const p = new QueuedPermits(1);
  const never = new AbortController();
  const first = await p.acquire(never.signal);
  const order: string[] = [];
  const gone = new AbortController();
  const w1 = p.acquire(gone.signal).then(
    () => order.push('aborted waiter granted'),
    (e) => order.push(`w1 ${e}`),
  );
  const w2 = p.acquire(never.signal).then((release) => {
    order.push('w2');
    return release;
  });
  gone.abort('retired');
  await w1;
  first();
  const release2 = await w2;
  expect(order).toEqual(['w1 retired', 'w2']);
  release2();
  const again = await p.acquire(never.signal);
  again();
});

test('QueuedPermits: an already aborted signal rejects at once', async () => {
  const p = new QueuedPermits(1);
  const c = new AbortController();
  c.abort('shutdown');
  await expect(p.acquire(c.signal)).rejects.toBe('shutdown');
});
