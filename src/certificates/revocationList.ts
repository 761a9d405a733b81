/**
 * An X.509 certificate revocation list (RFC 5280 §5) read from its DER: the issuer's
 * name, `thisUpdate` and `nextUpdate`, the revoked serial numbers, and what its
 * signature covers, checked against a candidate issuer's key with `crypto.verify`.
 * Node parses certificates but not CRLs; this reads only those fields, strictly.
 *
 * Refused rather than half-understood (RFC 5280 §5.2, §5.3: a CRL with a critical
 * extension the reader cannot process must not be used): delta CRLs, issuing
 * distribution points, indirect CRLs (a critical `certificateIssuer` entry extension),
 * and signature algorithms other than RSA PKCS#1 v1.5 and ECDSA with SHA-256/384/512,
 * Ed25519 and Ed448.
 */
import { type KeyObject, verify } from 'node:crypto';
import {
  children,
  contentOf,
  DerError,
  encoded,
  expectTlv,
  oidOf,
  serialOf,
  TAG,
  type Tlv,
  timeOf,
  wholeTlv,
} from './der.js';

/** Signature algorithm OID → the digest `crypto.verify` takes (null: the key's own, EdDSA). */
const SIGNATURE_ALGORITHMS: ReadonlyMap<string, string | null> = new Map([
  ['1.2.840.113549.1.1.11', 'sha256'],
  ['1.2.840.113549.1.1.12', 'sha384'],
  ['1.2.840.113549.1.1.13', 'sha512'],
  ['1.2.840.10045.4.3.2', 'sha256'],
  ['1.2.840.10045.4.3.3', 'sha384'],
  ['1.2.840.10045.4.3.4', 'sha512'],
  ['1.3.101.112', null],
  ['1.3.101.113', null],
]);

export interface RevocationList {
  /** The issuer `Name` as encoded. */
  readonly issuerName: Buffer;
  readonly thisUpdate: number;
  /** null: the CRL names no next update. */
  readonly nextUpdate: number | null;
  /** Revoked serial numbers: upper-case hex without leading zeros. */
  readonly revoked: ReadonlySet<string>;
  /** True when `key` (the issuer's public key) verifies the CRL's signature. */
  signedBy(key: KeyObject): boolean;
}

export class RevocationListError extends Error {
  override readonly name = 'RevocationListError';
}

function fail(message: string): never {
  throw new RevocationListError(message);
}

/** The digest of an AlgorithmIdentifier, or a failure naming an unsupported one. */
function algorithmOf(der: Buffer, identifier: Tlv): string | null {
  const [oid] = children(der, identifier);
  if (oid === undefined) throw new DerError('empty AlgorithmIdentifier');
  const name = oidOf(der, oid);
  const digest = SIGNATURE_ALGORITHMS.get(name);
  if (digest === undefined) fail(`its signature algorithm ${name} is not supported`);
  return digest;
}

/** Throws when `extensions` (an `Extensions` SEQUENCE) holds a critical one. */
function refuseCritical(der: Buffer, extensions: Tlv, where: string): void {
  for (const extension of children(der, extensions)) {
    const [id, second] = children(der, extension);
    if (id === undefined) throw new DerError('empty Extension');
    if (second?.tag === TAG.boolean && contentOf(der, second)[0] !== 0) {
      fail(`its ${where} has a critical extension (${oidOf(der, id)}) that is not supported`);
    }
  }
}

/**
 * The CRL `der` encodes; throws a RevocationListError (a reason fit for a start-up
 * problem) or a DerError (not a CRL at all).
 */
export function parseRevocationList(der: Buffer): RevocationList {
  const list = wholeTlv(der, TAG.sequence);
  const [tbs, outerAlgorithm, signature, extra] = children(der, list);
  if (tbs?.tag !== TAG.sequence || outerAlgorithm?.tag !== TAG.sequence) {
    throw new DerError('not a CRL');
  }
  if (signature?.tag !== TAG.bitString || extra !== undefined) throw new DerError('not a CRL');
  const fields = children(der, tbs);
  let i = 0;
  if (fields[i]?.tag === TAG.integer) {
    // v2 (1) is the only version with a number written (RFC 5280 §5.1.2.1).
    if (serialOf(der, fields[i] as Tlv) !== '1') fail('its version is not v2');
    i++;
  }
  const innerAlgorithm = fields[i++];
  const issuer = fields[i++];
  const thisUpdate = fields[i++];
  if (innerAlgorithm?.tag !== TAG.sequence || issuer?.tag !== TAG.sequence || !thisUpdate) {
    throw new DerError('not a CRL');
  }
  // The signature field inside must repeat the outer one (RFC 5280 §5.1.1.2).
  if (!encoded(der, innerAlgorithm).equals(encoded(der, outerAlgorithm))) {
    fail('its two signature algorithm fields differ');
  }
  const digest = algorithmOf(der, outerAlgorithm);
  let nextUpdate: number | null = null;
  const next = fields[i];
  if (next?.tag === TAG.utcTime || next?.tag === TAG.generalizedTime) {
    nextUpdate = timeOf(der, next);
    i++;
  }
  const revoked = new Set<string>();
  if (fields[i]?.tag === TAG.sequence) {
    for (const entry of children(der, fields[i] as Tlv)) {
      const [serial, date, extensions, more] = children(der, entry);
      if (serial === undefined || date === undefined || more !== undefined) {
        throw new DerError('not a CRL entry');
      }
      timeOf(der, date);
      if (extensions !== undefined) refuseCritical(der, extensions, 'entry');
      revoked.add(serialOf(der, serial));
    }
    i++;
  }
  if (fields[i]?.tag === 0xa0) {
    const wrapped = fields[i] as Tlv;
    const inner = expectTlv(der, wrapped.valueStart, TAG.sequence, wrapped.end);
    if (inner.end !== wrapped.end) throw new DerError('not Extensions');
    refuseCritical(der, inner, 'list');
    i++;
  }
  if (i !== fields.length) throw new DerError('not a CRL');
  const bits = contentOf(der, signature);
  if (bits.length < 2 || bits[0] !== 0) throw new DerError('not a signature');
  const signed = encoded(der, tbs);
  const signatureBytes = bits.subarray(1);
  return {
    issuerName: Buffer.from(encoded(der, issuer)),
    thisUpdate: timeOf(der, thisUpdate),
    nextUpdate,
    revoked,
    signedBy(key) {
      try {
        return verify(digest, signed, key, signatureBytes);
      } catch {
        // A key of another type than the signature's: not this CRL's issuer.
        return false;
      }
    },
  };
}
