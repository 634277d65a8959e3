// A listener that could not bind, in the words an operator acts on: which listener, which address,
// why. `serve` prints it as one line and exits 1 (nothing else was started: the relay binds both
// listeners before it dials any engine).

export type ListenerName = 'gRPC' | 'metrics';

const CAUSES: Record<string, string> = {
  EADDRINUSE: 'the port is in use by another process',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this host',
};

export class ListenError extends Error {
  constructor(
    readonly listener: ListenerName,
    readonly address: string,
    readonly code: string | undefined,
    cause: string,
  ) {
    super(`cannot listen on ${address} (${listener}): ${cause}`);
    this.name = 'ListenError';
  }
}

/** `err` from binding `listener` on `address` as a ListenError (errno codes named), or `err` itself. */
export function listenError(listener: ListenerName, address: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !/^E[A-Z]+$/.test(code)) return err;
  return new ListenError(listener, address, code, `${CAUSES[code] ?? (err as Error).message} (${code})`);
}
