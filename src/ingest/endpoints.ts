// Per-rank ZMQ endpoints, as vLLM derives them (engine-inputs.md §1.1): TCP ports are offset by the
// rank's position in the worker, inproc/ipc names get a `_dp<rank>` suffix.

const TCP_PORT = /^(tcp:\/\/.+:)(\d+)$/;

/** The endpoint of absolute rank `rank` of a worker whose first rank is `startRank`. */
export function rankEndpoint(base: string, rank: number, startRank: number): string {
  const offset = rank - startRank;
  const tcp = TCP_PORT.exec(base);
  if (tcp) {
    const port = Number(tcp[2]);
    // Port 0 asks the OS for a port per rank (tests); there is no base to offset from.
    return port === 0 ? base : `${tcp[1]}${port + offset}`;
  }
  if (base.startsWith('inproc://') || base.startsWith('ipc://')) return offset === 0 ? base : `${base}_dp${rank}`;
  throw new RangeError(`unsupported ZMQ endpoint: ${base}`);
}
