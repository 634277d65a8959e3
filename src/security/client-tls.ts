// TLS for consumers (RelayClient, ShardedRelayClient, `query`, `watch`): channel credentials that
// verify the relay's certificate and, for mTLS, present a client certificate. Loads no server code.
import * as fs from 'fs';
import * as grpc from '@grpc/grpc-js';

export interface ClientTlsOptions {
  /** PEM CA bundle the relay's certificate is verified against; default: the system roots. */
  ca?: Buffer | string;
  /** PEM client certificate chain and its key, presented to a relay that asks (mTLS). */
  cert?: Buffer | string;
  key?: Buffer | string;
  /** Name the relay's certificate must carry (and the SNI sent), instead of the address's host. */
  servername?: string;
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
}

/** Plaintext without `tls` (the contract's default). Throws TypeError when cert and key are not given together. */
export function clientChannel(tls: ClientTlsOptions | undefined): ClientChannel {
  if (!tls) return { credentials: grpc.credentials.createInsecure(), channelOptions: {} };
  if ((tls.cert === undefined) !== (tls.key === undefined)) throw new TypeError('tls.cert and tls.key go together');
  const pem = (v: Buffer | string | undefined): Buffer | null => (v === undefined ? null : Buffer.from(v));
  return {
    credentials: grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert)),
    channelOptions: tls.servername === undefined ? {} : { 'grpc.ssl_target_name_override': tls.servername, 'grpc.default_authority': tls.servername },
  };
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
