// Keeps every libuv worker thread busy (a slow PBKDF2 on each: Node runs it there), so that work a
// test queues behind them provably has not run on them yet: what a call did on its own thread is
// then told apart from what it handed to a worker, without timing either.
import { pbkdf2 } from 'crypto';

/** Settles once every worker thread is free again (each holds its PBKDF2 for a second or more). */
export function occupyLibuvThreads(): Promise<void> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const one = () => new Promise<void>((resolve, reject) => pbkdf2('busy', 'salt', 2_000_000, 32, 'sha512', (err) => (err ? reject(err) : resolve())));
  return Promise.all(Array.from({ length: threads }, one)).then(() => undefined);
}
