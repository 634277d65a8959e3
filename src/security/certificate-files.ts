// Certificate, key and CA files as a grpc-js certificate provider, for the relay's listener and for
// a long-running client (RelayClient's `tls.certFile`...): read and checked at start (a bad file is a
// clear error before anything connects or listens), then polled, so a rotation is picked up by the
// next connection without a restart. Polling (not fs.watch) also follows symlink swaps such as Kubernetes secret
// volumes. A changed set that does not form a valid pair (a rotation caught halfway, a truncated
// file) is reported and the previous one stays in service until the files are consistent again.
import { X509Certificate, createPrivateKey } from 'crypto';
import * as fs from 'fs';
import * as tls from 'tls';
import type { experimental } from '@grpc/grpc-js';
import { TLS_FILES_POLL_MS } from '../config/defaults';

/** cert and key go together (a listener always has them; a client presents them for mTLS). */
export interface CertificatePaths {
  cert?: string;
  key?: string;
  ca?: string;
}

export interface CertificateMaterial {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
  /** The leaf certificate of `cert` (subject and validity for logs and metrics). */
  leaf?: X509Certificate;
}

/** A file that cannot be read or does not hold what its field needs. */
export class CertificateFileError extends Error {
  constructor(
    readonly field: keyof CertificatePaths,
    readonly file: string,
    readonly problem: string,
  ) {
    super(`tls.${field} ${file}: ${problem}`);
    this.name = 'CertificateFileError';
  }
}

/** Reads and checks the files now (CertificateFileError on the first problem; TypeError for a cert without a key). */
export function readCertificateFiles(paths: CertificatePaths): CertificateMaterial {
  if ((paths.cert === undefined) !== (paths.key === undefined)) throw new TypeError('a certificate file and its key file go together');
  const read = (field: keyof CertificatePaths): Buffer | undefined => {
    if (paths[field] === undefined) return undefined;
    try {
      return fs.readFileSync(paths[field]);
    } catch (err) {
      throw new CertificateFileError(field, paths[field], `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  };
  return checkMaterial(paths, read('cert'), read('key'), read('ca'));
}

function checkMaterial(paths: CertificatePaths, cert: Buffer | undefined, key: Buffer | undefined, ca: Buffer | undefined): CertificateMaterial {
  let leaf: X509Certificate | undefined;
  if (cert !== undefined && key !== undefined) {
    const parsed = parse('cert', () => new X509Certificate(cert), 'is not a PEM certificate');
    const privateKey = parse('key', () => createPrivateKey(key), 'is not an unencrypted PEM private key');
    if (!parsed.checkPrivateKey(privateKey)) throw new CertificateFileError('key', paths.key!, `does not match the certificate in ${paths.cert}`);
    leaf = parsed;
  }
  if (ca !== undefined) parse('ca', () => new X509Certificate(ca), 'is not a PEM certificate bundle');
  // What TLS will do with them: catches what the checks above do not (a broken chain entry).
  parse(cert ? 'cert' : 'ca', () => tls.createSecureContext({ ...(cert ? { cert, key } : {}), ...(ca ? { ca } : {}) }), cert ? 'is not usable with its key and CA' : 'is not usable as a CA bundle');
  return { ...(cert ? { cert, key } : {}), ...(ca ? { ca } : {}), ...(leaf ? { leaf } : {}) };

  function parse<T>(field: keyof CertificatePaths, fn: () => T, problem: string): T {
    try {
      return fn();
    } catch (err) {
      throw new CertificateFileError(field, paths[field]!, `${problem} (${(err as Error).message})`);
    }
  }
}

export interface CertificateFilesOptions {
  pollMs?: number;
  /** A valid changed set is in service (new connections use it). */
  onReload?: (material: CertificateMaterial) => void;
  /** A changed set was refused; the previous one stays in service. */
  onError?: (err: CertificateFileError) => void;
}

type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

export class CertificateFiles implements experimental.CertificateProvider {
  private material: CertificateMaterial;
  private stamp: string;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private reloadCount = 0;
  private refusedCount = 0;

  /** Reads the files now: throws CertificateFileError when they are not a valid set. */
  constructor(
    readonly paths: CertificatePaths,
    private readonly options: CertificateFilesOptions = {},
  ) {
    this.stamp = fileStamp(paths);
    this.material = readCertificateFiles(paths);
  }

  /** The set in service. */
  current(): CertificateMaterial {
    return this.material;
  }

  /** Changed sets put into service, and refused, since the start. */
  counts(): { reloads: number; refused: number } {
    return { reloads: this.reloadCount, refused: this.refusedCount };
  }

  // grpc-js adds its listeners when its TLS server is created and removes them when it closes; the
  // files are polled only while someone listens. The current value goes out on the next tick, as
  // grpc-js's own providers do: its server registers for updates after asking for the first value.
  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    process.nextTick(() => this.caListeners.has(listener) && listener(this.caUpdate()));
    this.updatePolling();
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
    this.updatePolling();
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    process.nextTick(() => this.identityListeners.has(listener) && listener(this.identityUpdate()));
    this.updatePolling();
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
    this.updatePolling();
  }

  /** Stops polling for good (listeners get no further updates). Idempotent. */
  close(): void {
    this.closed = true;
    this.updatePolling();
  }

  /** Re-reads the files if any changed since the last look; true when a new set went into service. */
  check(): boolean {
    if (this.closed) return false;
    const stamp = fileStamp(this.paths);
    if (stamp === this.stamp) return false;
    this.stamp = stamp;
    let next: CertificateMaterial;
    try {
      next = readCertificateFiles(this.paths);
    } catch (err) {
      if (!(err instanceof CertificateFileError)) throw err;
      this.refusedCount += 1;
      this.options.onError?.(err);
      return false;
    }
    if (sameMaterial(next, this.material)) return false;
    this.material = next;
    this.reloadCount += 1;
    for (const listener of this.caListeners) listener(this.caUpdate());
    for (const listener of this.identityListeners) listener(this.identityUpdate());
    this.options.onReload?.(next);
    return true;
  }

  // A listener without a CA file asks for no CA; a client without one trusts Node's bundled roots,
  // as a TLS client does by default (grpc-js's channel needs a CA update to connect).
  private caUpdate(): experimental.CaCertificateUpdate {
    return { caCertificate: this.material.ca ?? publicRoots() };
  }

  private identityUpdate(): experimental.IdentityCertificateUpdate | null {
    const { cert, key } = this.material;
    return cert && key ? { certificate: cert, privateKey: key } : null;
  }

  private updatePolling(): void {
    const wanted = !this.closed && this.caListeners.size + this.identityListeners.size > 0;
    if (wanted && !this.timer) {
      this.timer = setInterval(() => this.check(), this.options.pollMs ?? TLS_FILES_POLL_MS);
      this.timer.unref();
    } else if (!wanted && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

let roots: Buffer | undefined;
function publicRoots(): Buffer {
  roots ??= Buffer.from(tls.rootCertificates.join('\n'));
  return roots;
}

/** Identity, size, content and status change times of each file (a symlink is followed to its target). */
function fileStamp(paths: CertificatePaths): string {
  return [paths.cert, paths.key, paths.ca]
    .map((file) => {
      if (file === undefined) return '-';
      try {
        const st = fs.statSync(file);
        return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
      } catch {
        return 'absent';
      }
    })
    .join('|');
}

function sameMaterial(a: CertificateMaterial, b: CertificateMaterial): boolean {
  const same = (x: Buffer | undefined, y: Buffer | undefined): boolean => (x === undefined ? y === undefined : y !== undefined && x.equals(y));
  return same(a.cert, b.cert) && same(a.key, b.key) && same(a.ca, b.ca);
}
