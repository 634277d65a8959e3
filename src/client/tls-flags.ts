// The `--tls*` flags of the consumer commands (`query`, `watch`, the global router): any of them
// turns TLS on. The files are checked now and then watched, so a long `watch` follows a rotation.
import { CertificateFileError, readCertificateFiles } from '../security/certificate-files';
import type { ClientTlsOptions } from '../security/client-tls';

export const CLIENT_TLS_FLAGS = {
  tls: { type: 'boolean' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-servername': { type: 'string' },
} as const;

export const CLIENT_TLS_USAGE = '[--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--tls-servername NAME]';

export interface ClientTlsFlagValues {
  tls?: boolean;
  'tls-ca'?: string;
  'tls-cert'?: string;
  'tls-key'?: string;
  'tls-servername'?: string;
}

/** Undefined (plaintext) when no TLS flag is given; throws an Error for a usage or file problem. */
export function clientTlsFromFlags(values: ClientTlsFlagValues): ClientTlsOptions | undefined {
  const { tls, 'tls-ca': ca, 'tls-cert': cert, 'tls-key': key, 'tls-servername': servername } = values;
  if (!tls && ca === undefined && cert === undefined && key === undefined && servername === undefined) return undefined;
  if ((cert === undefined) !== (key === undefined)) throw new Error('--tls-cert and --tls-key go together');
  try {
    readCertificateFiles({ ca, cert, key });
  } catch (err) {
    if (err instanceof CertificateFileError) throw new Error(`--tls-${err.field} ${err.file}: ${err.problem}`);
    throw err;
  }
  return { caFile: ca, certFile: cert, keyFile: key, servername };
}
