/**
 * What the gateway re-checks of a certificate a proxy forwarded, in OpenSSL's order, so
 * a header certificate gets the verdict the same certificate would get over TLS:
 *
 *   chain       with trust anchors: a path from the certificate through the forwarded
 *               intermediates (CA certificates each) to an anchor, each link checked by
 *               OpenSSL's issuance rule and the signature (`untrusted`; a certificate
 *               that signed itself: `self-signed`). Without anchors the proxy's
 *               verification is taken as is, and only a self-signed one is named so.
 *   revocation  with CRLs: for every certificate of the path below the anchor, a CRL of
 *               its issuer whose signature the issuer's key verifies; a serial on it is
 *               `revoked`; no such CRL, or one outside [thisUpdate, nextUpdate], is
 *               `untrusted` (OpenSSL's CRL_CHECK_ALL)
 *   dates       every certificate of the path within its validity (`expired`,
 *               `not-yet-valid`), against the injected clock
 *
 * The outcome depends on the time, so it is kept as a schedule: the fixed verdict of the
 * path, and the instants the others change at; `verdictAt` reads it for a moment.
 * Not checked (the terminator's job): name constraints, policies, path length, key
 * usage beyond issuance, extended key usage.
 */
import type { CertificateVerdict } from '../domain/clientCertificate.js';
import { issuedBy, type ParsedCertificate } from './certificateFields.js';
import type { CertificateTrust } from './certificateTrust.js';

/** Longest path tried through forwarded intermediates (the header bound caps them too). */
const MAX_INTERMEDIATES = 8;

export interface VerdictSchedule {
  /** A verdict the time cannot change (untrusted, self-signed, revoked); null: none. */
  readonly fixed: CertificateVerdict | null;
  /** The CRLs used are current within [crlFrom, crlUntil]. */
  readonly crlFrom: number;
  readonly crlUntil: number;
  /** Every certificate of the path is valid within [validFrom, validUntil]. */
  readonly validFrom: number;
  readonly validUntil: number;
}

export function verdictAt(schedule: VerdictSchedule, now: number): CertificateVerdict {
  if (schedule.fixed !== null) return schedule.fixed;
  if (now < schedule.crlFrom || now > schedule.crlUntil) return 'untrusted';
  if (now < schedule.validFrom) return 'not-yet-valid';
  if (now > schedule.validUntil) return 'expired';
  return 'verified';
}

/** Signed by its own key under its own name (OpenSSL's self-signed test: no key usage asked). */
function selfSigned(certificate: ParsedCertificate): boolean {
  return (
    certificate.issuerName.equals(certificate.subjectName) &&
    certificate.x509.verify(certificate.x509.publicKey)
  );
}

/** The path from `current` to an anchor, both included; null when none. */
function pathToAnchor(
  current: ParsedCertificate,
  pool: readonly ParsedCertificate[],
  anchors: readonly ParsedCertificate[],
  depth: number,
): ParsedCertificate[] | null {
  if (anchors.some((anchor) => anchor.der.equals(current.der))) return [current];
  for (const anchor of anchors) {
    if (anchor.x509.ca && issuedBy(current, anchor)) return [current, anchor];
  }
  if (depth >= MAX_INTERMEDIATES) return null;
  for (const candidate of pool) {
    if (!candidate.x509.ca || !issuedBy(current, candidate)) continue;
    const rest = pathToAnchor(
      candidate,
      pool.filter((c) => c !== candidate),
      anchors,
      depth + 1,
    );
    if (rest !== null) return [current, ...rest];
  }
  return null;
}

function fixed(verdict: CertificateVerdict): VerdictSchedule {
  return { fixed: verdict, crlFrom: 0, crlUntil: 0, validFrom: 0, validUntil: 0 };
}

/** The verdict schedule of `leaf` presented with the intermediates `chain`. */
export function verdictSchedule(
  leaf: ParsedCertificate,
  chain: readonly ParsedCertificate[],
  trust: CertificateTrust,
): VerdictSchedule {
  let path: ParsedCertificate[];
  if (trust.anchors.length === 0) {
    if (selfSigned(leaf)) return fixed('self-signed');
    path = [leaf];
  } else {
    const found = pathToAnchor(leaf, chain, trust.anchors, 0);
    if (found === null) return fixed(selfSigned(leaf) ? 'self-signed' : 'untrusted');
    path = found;
  }
  let crlFrom = Number.NEGATIVE_INFINITY;
  let crlUntil = Number.POSITIVE_INFINITY;
  if (trust.revocationLists.length > 0) {
    for (let i = 0; i + 1 < path.length; i++) {
      const certificate = path[i] as ParsedCertificate;
      const issuer = path[i + 1] as ParsedCertificate;
      const lists = trust.revocationLists.filter(
        (list) =>
          list.issuerName.equals(certificate.issuerName) && list.signedBy(issuer.x509.publicKey),
      );
      if (lists.length === 0) return fixed('untrusted');
      if (lists.some((list) => list.revoked.has(certificate.serial))) return fixed('revoked');
      const latest = lists.reduce((a, b) => (b.thisUpdate > a.thisUpdate ? b : a));
      crlFrom = Math.max(crlFrom, latest.thisUpdate);
      crlUntil = Math.min(crlUntil, latest.nextUpdate ?? Number.POSITIVE_INFINITY);
    }
  }
  return {
    fixed: null,
    crlFrom,
    crlUntil,
    validFrom: Math.max(...path.map((c) => c.notBefore)),
    validUntil: Math.min(...path.map((c) => c.notAfter)),
  };
}
