/**
 * The fields of an X.509 certificate (RFC 5280 §4.1) the gateway's own checks need, read
 * from its DER: the issuer and subject names as encoded (CRLs are matched to their
 * issuer by name, RFC 5280 §6.3.3), the serial number and the validity as instants.
 * Node's `X509Certificate` gives the rest (signature checks, issuance, public key); its
 * validity is text only on Node 20, and it never exposes the names' encoding.
 *
 * `parseCertificate` also refuses what Node would accept but is not one certificate: a
 * DER with bytes after it (OpenSSL reads the first value and ignores the rest).
 */
import { X509Certificate } from 'node:crypto';
import { children, DerError, encoded, expectTlv, serialOf, TAG, timeOf, wholeTlv } from './der.js';

export interface ParsedCertificate {
  readonly der: Buffer;
  readonly x509: X509Certificate;
  /** The issuer and subject `Name`s as encoded (tag and length included). */
  readonly issuerName: Buffer;
  readonly subjectName: Buffer;
  /** Upper-case hex, no leading zeros. */
  readonly serial: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

/** `der` as one certificate; throws a DerError (or Node's error) when it is not one. */
export function parseCertificate(der: Buffer): ParsedCertificate {
  const certificate = wholeTlv(der, TAG.sequence);
  const tbs = expectTlv(der, certificate.valueStart, TAG.sequence, certificate.end);
  const fields = children(der, tbs);
  // [0] EXPLICIT version, absent for v1.
  const at = fields[0]?.tag === 0xa0 ? 1 : 0;
  const [serial, , issuer, validity, subject] = fields.slice(at);
  if (subject === undefined || validity === undefined || issuer === undefined) {
    throw new DerError('not a certificate');
  }
  if (serial?.tag !== TAG.integer || validity.tag !== TAG.sequence) {
    throw new DerError('not a certificate');
  }
  if (issuer.tag !== TAG.sequence || subject.tag !== TAG.sequence) {
    throw new DerError('not a certificate');
  }
  const [notBefore, notAfter, extra] = children(der, validity);
  if (notBefore === undefined || notAfter === undefined || extra !== undefined) {
    throw new DerError('not a validity');
  }
  const x509 = new X509Certificate(der);
  return {
    der,
    x509,
    issuerName: encoded(der, issuer),
    subjectName: encoded(der, subject),
    serial: serialOf(der, serial),
    notBefore: timeOf(der, notBefore),
    notAfter: timeOf(der, notAfter),
  };
}

/**
 * True when `issuer` issued `certificate`: OpenSSL's issuance check (names, key
 * identifiers, the issuer's key usage) and the signature.
 */
export function issuedBy(certificate: ParsedCertificate, issuer: ParsedCertificate): boolean {
  return (
    certificate.x509.checkIssued(issuer.x509) && certificate.x509.verify(issuer.x509.publicKey)
  );
}
