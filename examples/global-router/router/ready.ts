// Waiting for a usable view: every DC has a catalog, readiness, and an installed replica for each
// pool the model resolves to. Event-driven; resolves with the DCs still incomplete at the deadline.
import type { GlobalRouter } from './global-router';

export function dcComplete(router: GlobalRouter, dc: string, model: string): boolean {
  const client = router.client(dc);
  if (client.readiness() === undefined) return false;
  const result = client.query({ model, tokens: [] });
  return result.kind === 'ok' && result.pools.every((p) => p.replica === 'ready');
}

export function waitReady(router: GlobalRouter, model: string, timeoutMs: number): Promise<string[]> {
  const incomplete = () => router.dcNames().filter((dc) => !dcComplete(router, dc, model));
  return new Promise((resolve) => {
    const events = ['catalog', 'readiness', 'replicaInstalled'] as const;
    const finish = () => {
      clearTimeout(timer);
      for (const dc of router.dcNames()) for (const e of events) router.client(dc).off(e, check);
      resolve(incomplete());
    };
    const check = () => {
      if (incomplete().length === 0) finish();
    };
    const timer = setTimeout(finish, timeoutMs);
    for (const dc of router.dcNames()) for (const e of events) router.client(dc).on(e, check);
    check();
  });
}
