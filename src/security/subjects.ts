// The allow-list of client certificate subjects (config `tls.allowedSubjects`). An entry is either a
// bare common name (`router-a`: a certificate whose only CN is that, whatever its other attributes;
// a subject with several CNs, `CN=evil, CN=router-a`, matches no bare name) or a full subject written as
// comma-separated `ATTR=value` pairs (`CN=router-a, O=acme`), which must name exactly the
// certificate's subject attributes, in any order. Pure functions: the config schema validates the
// entries with them and the transport checks each call's peer certificate with them.

/** A subject as attribute -> values (an attribute may repeat, e.g. several OU). */
export type Subject = ReadonlyMap<string, readonly string[]>;

export type SubjectPattern = { kind: 'cn'; cn: string } | { kind: 'subject'; subject: Subject };

const ATTRIBUTE = /^[A-Za-z][A-Za-z0-9.-]*$/;

/** Parses one allow-list entry; throws RangeError with the problem when it is malformed. */
export function parseSubjectPattern(entry: string): SubjectPattern {
  const text = entry.trim();
  if (text.length === 0) throw new RangeError('must not be empty');
  if (!text.includes('=')) return { kind: 'cn', cn: text };
  const subject = new Map<string, string[]>();
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const attr = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq < 0 || !ATTRIBUTE.test(attr) || value.length === 0) {
      throw new RangeError(`"${part.trim()}" is not ATTR=value (write a full subject as "CN=name, O=org", or a bare common name)`);
    }
    const key = attr.toUpperCase();
    subject.set(key, [...(subject.get(key) ?? []), value]);
  }
  return { kind: 'subject', subject };
}

/**
 * The subject of a certificate as Node reports it (`tls.PeerCertificate.subject`: attribute ->
 * value, or values when an attribute repeats).
 */
export function subjectOf(fields: Readonly<Record<string, string | string[] | undefined>>): Subject {
  const subject = new Map<string, string[]>();
  for (const [attr, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    subject.set(attr.toUpperCase(), Array.isArray(value) ? [...value] : [value]);
  }
  return subject;
}

export function subjectMatches(pattern: SubjectPattern, subject: Subject): boolean {
  if (pattern.kind === 'cn') {
    // Exactly one CN: with several, which one names the peer depends on who reads the certificate.
    const cns = subject.get('CN') ?? [];
    return cns.length === 1 && cns[0] === pattern.cn;
  }
  if (pattern.subject.size !== subject.size) return false;
  for (const [attr, values] of pattern.subject) {
    const actual = subject.get(attr);
    if (!actual || !sameValues(values, actual)) return false;
  }
  return true;
}

/** `CN=router-a, O=acme` (for error messages and logs). */
export function formatSubject(subject: Subject): string {
  return [...subject].flatMap(([attr, values]) => values.map((v) => `${attr}=${v}`)).join(', ');
}

function sameValues(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sorted = [...b].sort();
  return [...a].sort().every((v, i) => v === sorted[i]);
}
