// What the gRPC listener needs for config `tls`: server credentials fed by the watched certificate
// files, and the per-call check of the client certificate's subject. Without `tls` the listener is
// plaintext, as Dynamo's relay is (loopback, or behind a sidecar).
import type { X509Certificate } from 'crypto';
import * as grpc from '@grpc/grpc-js';
import { INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS } from '../config/defaults';
import type { TlsConfig } from '../config/schema';
import { ThrottledLogger } from '../ingest/throttle';
import { silentLogger, type Logger } from '../log';
import { CertificateFiles, type CertificateMaterial } from './certificate-files';
import { formatSubject, parseSubjectPattern, subjectMatches, subjectOf, type SubjectPattern } from './subjects';

// grpc-js does not export these two types by name.
type AuthContext = ReturnType<grpc.ServerInterceptingCallInterface['getAuthContext']>;
type CallStatus = Parameters<grpc.ServerInterceptingCallInterface['sendStatus']>[0];

/** What /metrics reports about TLS (README "Security"). */
export interface TlsStats {
  /** notAfter of the relay certificate in service, in seconds since the epoch. */
  certificateExpirySeconds: number;
  certificateReloadsTotal: number;
  /** Changed certificate file sets refused (the set in service was kept). */
  certificateRefusedTotal: number;
  /** Calls refused by the subject allow-list. */
  refusedCallsTotal: { unauthenticated: number; permissionDenied: number };
}

export interface ListenerSecurity {
  readonly credentials: grpc.ServerCredentials;
  /** Run before every call's handler (the subject allow-list). */
  readonly interceptors: grpc.ServerInterceptor[];
  /** Undefined for a plaintext listener. */
  stats(): TlsStats | undefined;
  /** Stops watching the files. */
  close(): void;
}

/** Reads the certificate files now (CertificateFileError when they are not a valid set). */
export function listenerSecurity(tls: TlsConfig | undefined, logger: Logger = silentLogger): ListenerSecurity {
  if (!tls) return { credentials: grpc.ServerCredentials.createInsecure(), interceptors: [], stats: () => undefined, close: () => {} };
  const files = new CertificateFiles(
    { cert: tls.cert, key: tls.key, ...(tls.ca !== undefined ? { ca: tls.ca } : {}) },
    {
      onReload: (m) => logger.info(certificateFields(m), 'tls certificates reloaded'),
      onError: (err) => logger.error({ file: err.file, field: `tls.${err.field}`, problem: err.problem, kept: 'the set in service' }, 'tls certificate files refused'),
    },
  );
  logger.info({ ...certificateFields(files.current()), clientCert: tls.ca === undefined ? 'none' : tls.requireClientCert ? 'required' : 'optional' }, 'tls enabled');
  // grpc-js 1.14 takes the identity provider first, whatever its declaration calls the parameter.
  const credentials = grpc.experimental.createCertificateProviderServerCredentials(files, tls.ca !== undefined ? files : null, tls.requireClientCert);
  const patterns = tls.allowedSubjects?.map(parseSubjectPattern);
  const refusedCallsTotal = { unauthenticated: 0, permissionDenied: 0 };
  const onRefused = (code: grpc.status): void => {
    if (code === grpc.status.UNAUTHENTICATED) refusedCallsTotal.unauthenticated += 1;
    else refusedCallsTotal.permissionDenied += 1;
  };
  return {
    credentials,
    interceptors: patterns ? [subjectAllowList(patterns, logger, onRefused)] : [],
    stats: () => {
      const { reloads, refused } = files.counts();
      return {
        certificateExpirySeconds: Math.floor(Date.parse(listenerLeaf(files.current()).validTo) / 1000),
        certificateReloadsTotal: reloads,
        certificateRefusedTotal: refused,
        refusedCallsTotal: { ...refusedCallsTotal },
      };
    },
    close: () => files.close(),
  };
}

/**
 * Why a call's peer may not call, or undefined when it may. A peer without a verified certificate
 * is UNAUTHENTICATED; a verified one whose subject is not listed is PERMISSION_DENIED.
 */
function checkPeerSubject(patterns: readonly SubjectPattern[], auth: AuthContext): CallStatus | undefined {
  const cert = auth.sslPeerCertificate;
  if (!cert) {
    return { code: grpc.status.UNAUTHENTICATED, details: 'a client certificate signed by the relay\'s CA is required (tls.allowedSubjects is set)' };
  }
  const subject = subjectOf(cert.subject as unknown as Record<string, string | string[]>);
  if (patterns.some((p) => subjectMatches(p, subject))) return undefined;
  return { code: grpc.status.PERMISSION_DENIED, details: `client certificate subject "${formatSubject(subject)}" is not in tls.allowedSubjects` };
}

function subjectAllowList(patterns: readonly SubjectPattern[], logger: Logger, onRefused: (code: grpc.status) => void): grpc.ServerInterceptor {
  // Anyone who can connect can be refused, as often as they like: the same log budget as bad engine input.
  const refusals = new ThrottledLogger(logger, INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS);
  return (method, call) =>
    new grpc.ServerInterceptingCall(call, {
      // The auth context belongs to the connection; checking it when the call's headers arrive
      // rejects the call before any request message is read or handler runs.
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, proceed) => {
            const denial = checkPeerSubject(patterns, call.getAuthContext());
            if (!denial) return proceed(metadata);
            onRefused(denial.code!);
            refusals.warn({ method: method.path, peer: call.getPeer(), code: denial.code, reason: denial.details }, 'call refused');
            call.sendStatus(denial);
          },
        }),
    });
}

/** A listener's set always has its certificate (tls.cert and tls.key are required). */
function listenerLeaf(m: CertificateMaterial): X509Certificate {
  return m.leaf!;
}

function certificateFields(m: CertificateMaterial): Record<string, string> {
  const leaf = listenerLeaf(m);
  return { subject: leaf.subject.replace(/\n/g, ', '), notAfter: leaf.validTo, fingerprint256: leaf.fingerprint256 };
}
