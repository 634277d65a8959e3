// The `tls` config block and its command-line overrides, the allow-list entry grammar, and the
// checks on the certificate files (clear errors naming the file and the problem).
import * as fs from 'fs';
import { ConfigError } from '../../src/config/errors';
import { parseConfigText } from '../../src/config/load';
import { CertificateFileError, readCertificateFiles } from '../../src/security/certificate-files';
import { formatSubject, parseSubjectPattern, subjectMatches, subjectOf } from '../../src/security/subjects';
import { CertificateFactory } from '../support/certificates';

const parse = (doc: object, overrides = {}) => parseConfigText(JSON.stringify({ dcId: 'dc-a', ...doc }), 'relay.json', overrides);

function errorOf(doc: object): string {
  try {
    parse(doc);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a config error');
}

describe('tls config', () => {
  test('plaintext when omitted; requireClientCert defaults to false', () => {
    expect(parse({}).tls).toBeUndefined();
    expect(parse({ tls: { cert: 'c.pem', key: 'k.pem' } }).tls).toEqual({ cert: 'c.pem', key: 'k.pem', requireClientCert: false });
  });

  test.each([
    [{ tls: { cert: 'c.pem' } }, 'relay.json: tls.key: required'],
    [{ tls: { cert: 'c.pem', key: 'k.pem', requireClientCert: true } }, 'relay.json: tls.ca: requireClientCert needs a CA'],
    [{ tls: { cert: 'c.pem', key: 'k.pem', allowedSubjects: ['router'] } }, 'relay.json: tls.ca: allowedSubjects needs a CA'],
    [{ tls: { cert: 'c.pem', key: 'k.pem', ca: 'ca.pem', allowedSubjects: [] } }, 'relay.json: tls.allowedSubjects: must list at least one subject'],
    [{ tls: { cert: 'c.pem', key: 'k.pem', ca: 'ca.pem', allowedSubjects: ['CN=a, O'] } }, 'relay.json: tls.allowedSubjects.0: "O" is not ATTR=value'],
    [{ tls: { cert: 'c.pem', key: 'k.pem', ca: 'ca.pem', allowedSubjects: ['  '] } }, 'relay.json: tls.allowedSubjects.0: must not be empty'],
    [{ tls: { cert: 'c.pem', key: 'k.pem', crt: 'x' } }, 'relay.json: tls.crt: unknown field'],
  ])('%j is refused', (doc, message) => {
    expect(errorOf(doc)).toContain(message);
  });

  test('--tls-* flags override the file field by field, or make the block', () => {
    const file = { tls: { cert: 'c.pem', key: 'k.pem', ca: 'ca.pem' } };
    expect(parse(file, { tls: { cert: 'new.pem', requireClientCert: true, key: undefined } }).tls).toEqual({
      cert: 'new.pem',
      key: 'k.pem',
      ca: 'ca.pem',
      requireClientCert: true,
    });
    expect(parse({}, { tls: { cert: 'c.pem', key: 'k.pem' } }).tls).toEqual({ cert: 'c.pem', key: 'k.pem', requireClientCert: false });
    expect(parse({}, { tls: {} }).tls).toBeUndefined();
  });
});

describe('subject allow-list entries', () => {
  const router = subjectOf({ CN: 'router-a', O: 'acme', OU: ['west', 'gpu'] });

  test.each([
    ['router-a', true],
    ['router-b', false],
    ['CN=router-a, O=acme, OU=west, OU=gpu', true],
    ['ou=gpu,cn=router-a,o=acme,ou=west', true],
    ['CN=router-a, O=acme', false], // a full subject names every attribute
    ['CN=router-a, O=acme, OU=west, OU=cpu', false],
    ['CN=router-a, O=other, OU=west, OU=gpu', false],
  ])('%s matches: %s', (entry, expected) => {
    expect(subjectMatches(parseSubjectPattern(entry), router)).toBe(expected);
  });

  test.each([
    ['router-a', false],
    ['evil', false],
    ['CN=evil, CN=router-a', true],
    ['CN=router-a', false],
  ])('with two CNs (CN=evil, CN=router-a), %s matches: %s', (entry, expected) => {
    // A bare name needs exactly one CN; a full subject may name both.
    expect(subjectMatches(parseSubjectPattern(entry), subjectOf({ CN: ['evil', 'router-a'] }))).toBe(expected);
  });

  test('a subject is printed as ATTR=value pairs', () => {
    expect(formatSubject(router)).toBe('CN=router-a, O=acme, OU=west, OU=gpu');
  });
});

describe('certificate files', () => {
  const certs = new CertificateFactory();
  afterAll(() => certs.remove());
  const ca = certs.ca('ca');
  const relay = certs.server('relay', ca);
  const other = certs.server('other', ca);

  function problem(paths: { cert: string; key: string; ca?: string }): CertificateFileError {
    try {
      readCertificateFiles(paths);
    } catch (err) {
      expect(err).toBeInstanceOf(CertificateFileError);
      return err as CertificateFileError;
    }
    throw new Error('expected a certificate file error');
  }

  test('a valid set is read with its leaf certificate', () => {
    expect(readCertificateFiles({ ...relay, ca: ca.cert }).leaf?.subject).toBe('CN=relay');
  });

  test('each bad file is named with its problem', () => {
    const missing = `${certs.dir}/missing.pem`;
    const garbage = `${certs.dir}/garbage.pem`;
    fs.writeFileSync(garbage, 'not a certificate\n');
    expect(problem({ cert: missing, key: relay.key })).toMatchObject({ field: 'cert', file: missing, problem: 'cannot read: ENOENT' });
    expect(problem({ cert: garbage, key: relay.key }).field).toBe('cert');
    expect(problem({ cert: relay.cert, key: garbage }).field).toBe('key');
    expect(problem({ cert: relay.cert, key: other.key })).toMatchObject({ field: 'key', problem: `does not match the certificate in ${relay.cert}` });
    expect(problem({ ...relay, ca: garbage }).field).toBe('ca');
  });
});
