// TLS for consumers (RelayClient, ShardedRelayClient, `query`, `watch`): channel credentials that
// verify the relay's certificate and, for mTLS, present a client certificate. Given as files, they
// are watched as the relay's own are (certificate-files.ts), so a long-running router picks up a
// rotated certificate, key or CA on its next connection without a restart. Loads no server code.
import * as fs from 'fs';
import * as grpc from '@grpc/grpc-js';
import { CertificateFiles, type CertificateFileError } from './certificate-files';

export interface ClientTlsOptions {
  /** PEM CA bundle the relay's certificate is verified against; default: the system roots. */
  ca?: Buffer | string;
  /** PEM client certificate chain and its key, presented to a relay that asks (mTLS). */
  cert?: Buffer | string;
  key?: Buffer | string;
  /** Name the relay's certificate must carry (and the SNI sent), instead of the address's host. */
  servername?: string;
  /**
   * The same as files instead of PEMs (not both): read and checked at once, then polled every
   * second; a changed set is used by the next connection (open ones keep theirs), one that does not
   * fit together is refused (RelayClient reports it as an `error` event) and the set in use kept.
   */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/** File names of the same, as the CLIs take them. */
export interface ClientTlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
}

export interface ClientChannel {
  credentials: grpc.ChannelCredentials;
  channelOptions: grpc.ChannelOptions;
  /** Stops watching the files (with the channel). */
  close(): void;
}

/**
 * Plaintext without `tls` (the contract's default). Throws TypeError when cert and key are not given
 * together or PEMs and files are mixed, CertificateFileError when a file is not usable.
 */
export function clientChannel(tls: ClientTlsOptions | undefined, onRefused?: (err: CertificateFileError) => void): ClientChannel {
  if (!tls) return { credentials: grpc.credentials.createInsecure(), channelOptions: {}, close: () => {} };
  const channelOptions = tls.servername === undefined ? {} : { 'grpc.ssl_target_name_override': tls.servername, 'grpc.default_authority': tls.servername };
  const { caFile, certFile, keyFile } = tls;
  if (caFile === undefined && certFile === undefined && keyFile === undefined) {
    if ((tls.cert === undefined) !== (tls.key === undefined)) throw new TypeError('tls.cert and tls.key go together');
    const pem = (v: Buffer | string | undefined): Buffer | null => (v === undefined ? null : Buffer.from(v));
    return { credentials: grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert)), channelOptions, close: () => {} };
  }
  if (tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined) throw new TypeError('tls: give PEMs (ca, cert, key) or files (caFile, certFile, keyFile), not both');
  if ((certFile === undefined) !== (keyFile === undefined)) throw new TypeError('tls.certFile and tls.keyFile go together');
  const files = new CertificateFiles(
    { ...(caFile !== undefined ? { ca: caFile } : {}), ...(certFile !== undefined ? { cert: certFile, key: keyFile } : {}) },
    { ...(onRefused ? { onError: onRefused } : {}) },
  );
  // Each new connection builds its TLS context from the latest set the files' listeners were given.
  const credentials = grpc.experimental.createCertificateProviderChannelCredentials(files, certFile === undefined ? null : files);
  return { credentials, channelOptions, close: () => files.close() };
}

/** Reads the files given (an Error naming the file when one cannot be read). */
export function readClientTlsFiles(files: ClientTlsFiles): ClientTlsOptions {
  const tls: ClientTlsOptions = files.servername === undefined ? {} : { servername: files.servername };
  for (const field of ['ca', 'cert', 'key'] as const) {
    const file = files[field];
    if (file === undefined) continue;
    try {
      tls[field] = fs.readFileSync(file);
    } catch (err) {
      throw new Error(`TLS ${field} file ${file}: cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  return tls;
}
