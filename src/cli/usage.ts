// What the `kv-dc-relay` commands share: the exit codes (one definition), the usage error, the
// checks of option values, and HOST:PORT validation done before anything connects.
import * as net from 'net';
import { InvalidArgumentError } from 'commander';
import { clientTlsFromFlags } from '../client/tls-flags';
import type { ClientTlsOptions } from '../security/client-tls';

/** The process exit codes of every command (documented in `kv-dc-relay --help`). */
export const EXIT = {
  /** Done: answered, or stopped by SIGINT/SIGTERM. */
  ok: 0,
  /** A runtime failure: no answer from a relay, a port in use, a native addon that does not load. */
  failure: 1,
  /** A usage or config error: nothing was started. */
  usage: 2,
} as const;

/** A wrong command line: one line on stderr, exit 2. */
export class UsageError extends Error {}

/** An option value parser for an integer in [min, max] (commander calls it; its error names the option). */
export function integerOption(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const n = /^\d+$/.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected an integer in ${min}..${max}`);
    return n;
  };
}

/**
 * A relay address as `query` and `watch` take it: HOST:PORT with a DNS name, an IPv4 address or a
 * bracketed IPv6 address, and a port in 1..65535. Checked before anything connects, so a URL or a
 * port-less name is a usage error at once instead of a connection that never comes.
 */
export function parseRelayAddress(text: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw new UsageError(`'${text}' is a URL: give the relay as HOST:PORT, without a scheme`);
  const m = /^(?:\[([^\]]+)\]|([^:[\]\s/]+)):(\d{1,5})$/.exec(text);
  if (!m) throw new UsageError(`'${text}' is not HOST:PORT (a host name or IP address, a colon and a port)`);
  const port = Number(m[3]);
  if (port < 1 || port > 65_535) throw new UsageError(`'${text}': port must be in 1..65535`);
  if (m[1] !== undefined && net.isIPv6(m[1]) === false) throw new UsageError(`'${text}': only an IPv6 address goes in brackets`);
  if (m[2] !== undefined && !net.isIPv4(m[2]) && !/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/.test(m[2])) {
    throw new UsageError(`'${text}': '${m[2]}' is not a host name or IP address`);
  }
  return text;
}

/** A comma-separated list of relay addresses, each checked by parseRelayAddress. */
export function parseRelayAddresses(text: string): string[] {
  return text.split(',').map((part) => parseRelayAddress(part.trim()));
}

/**
 * The cause of a failed connection, from a gRPC error message, in the words an operator looks for:
 * connection refused, name resolution, TLS handshake, timeout, or the message as it is; gRPC's
 * detail follows in parentheses, without its boilerplate.
 */
export function connectionCause(message: string): string {
  const detail = message
    .replace(/^No connection established\. Last error: (Error: )?/, '')
    .replace(/\.?\s*Resolution note:\s*$/, '')
    .trim();
  const kind = /ECONNREFUSED|Connection refused/i.test(message)
    ? 'connection refused'
    : /Name resolution failed|ENOTFOUND|EAI_AGAIN|getaddrinfo/i.test(message)
      ? 'name resolution failed'
      : /handshake|SSL|certificate|TLS|wrong version number/i.test(message)
        ? 'TLS handshake failed'
        : /ETIMEDOUT|timed out|Deadline/i.test(message)
          ? 'connection timed out'
          : undefined;
  return kind ? `${kind} (${detail})` : detail;
}

/** The `--tls*` options of `query` and `watch` as commander names them (camelCase). */
export interface TlsOptionValues {
  tls?: boolean;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServername?: string;
}

/** Client TLS from those options (undefined: plaintext); a usage error for a bad file or pairing. */
export function clientTls(flags: TlsOptionValues): ClientTlsOptions | undefined {
  try {
    return clientTlsFromFlags({ tls: flags.tls, 'tls-ca': flags.tlsCa, 'tls-cert': flags.tlsCert, 'tls-key': flags.tlsKey, 'tls-servername': flags.tlsServername });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
