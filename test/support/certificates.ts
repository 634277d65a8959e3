// Certificates made with the openssl binary at test time: CAs, relay (server) certificates for
// 127.0.0.1/localhost and client certificates, each a PEM file pair in a temporary directory.
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const OPENSSL_CONFIG = `
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost,DNS:relay.test
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
`;

export interface CertFiles {
  cert: string;
  key: string;
}

export class CertificateFactory {
  readonly dir: string;
  private readonly config: string;
  private serial = 0;

  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-tls-'));
    this.config = path.join(this.dir, 'openssl.cnf');
    fs.writeFileSync(this.config, OPENSSL_CONFIG);
  }

  /** A self-signed CA. */
  ca(name: string): CertFiles {
    return this.make(name, `/CN=${name}`, 'ca');
  }

  /** A relay certificate (SAN 127.0.0.1, localhost, relay.test) signed by `ca`. */
  server(name: string, ca: CertFiles, subject = `/CN=${name}`): CertFiles {
    return this.make(name, subject, 'server', ca);
  }

  /**
   * A client certificate with `subject` (openssl form, `/CN=router/O=acme`; `+` joins attributes
   * into one multi-valued RDN, `/CN=a+CN=b`) signed by `ca`.
   */
  client(name: string, ca: CertFiles, subject = `/CN=${name}`): CertFiles {
    return this.make(name, subject, 'client', ca);
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private make(name: string, subject: string, extensions: string, ca?: CertFiles): CertFiles {
    this.serial += 1;
    const files = { cert: path.join(this.dir, `${name}.pem`), key: path.join(this.dir, `${name}-key.pem`) };
    execFileSync('openssl', [
      'req', '-x509', '-config', this.config, '-extensions', extensions,
      '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', files.key, '-out', files.cert, '-days', '2', '-subj', subject,
      '-set_serial', String(this.serial),
      ...(subject.includes('+') ? ['-multivalue-rdn'] : []),
      ...(ca ? ['-CA', ca.cert, '-CAkey', ca.key] : []),
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    return files;
  }
}
