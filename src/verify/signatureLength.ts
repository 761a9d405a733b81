/**
 * The length in octets of a valid signature for an algorithm and key, known before the
 * signature is checked: ECDSA r‖s, two field-size integers (RFC 7518 §3.4); Ed25519 64
 * octets, Ed448 114 (RFC 8037 §3.1, RFC 8032 §5); RSASSA-PKCS1-v1_5 and RSASSA-PSS the
 * modulus length (RFC 7518 §3.3, §3.5; RFC 8017 §8.1.1, §8.2.1). A signature of any
 * other length is not one a compliant signer writes: RSASSA-PSS verification in OpenSSL
 * accepts one with its leading zero octet dropped, a second spelling of the same token.
 *
 * A key's length is read from it once and remembered for as long as the key lives.
 */
import { KeyObject, type webcrypto } from 'node:crypto';

const BY_ALGORITHM: Readonly<Record<string, number>> = { ES256: 64, ES384: 96, ES512: 132 };

const byKey = new WeakMap<object, number>();

/** Octets of a signature by `alg` with `key`; throws (a 500) for a key type we never accept. */
export function signatureLength(alg: string, key: KeyObject | webcrypto.CryptoKey): number {
  const fixed = BY_ALGORITHM[alg];
  if (fixed !== undefined) return fixed;
  let octets = byKey.get(key);
  if (octets === undefined) {
    octets = key instanceof KeyObject ? ofKeyObject(key) : ofCryptoKey(key);
    if (octets === undefined) throw new Error(`no signature length known for a ${alg} key`);
    byKey.set(key, octets);
  }
  return octets;
}

function ofKeyObject(key: KeyObject): number | undefined {
  switch (key.asymmetricKeyType) {
    case 'ed25519':
      return 64;
    case 'ed448':
      return 114;
    case 'rsa':
    case 'rsa-pss':
      return octetsOf(key.asymmetricKeyDetails?.modulusLength);
    default:
      return undefined;
  }
}

function ofCryptoKey(key: webcrypto.CryptoKey): number | undefined {
  switch (key.algorithm.name) {
    case 'Ed25519':
      return 64;
    case 'Ed448':
      return 114;
    case 'RSASSA-PKCS1-v1_5':
    case 'RSA-PSS':
      return octetsOf((key.algorithm as webcrypto.RsaHashedKeyAlgorithm).modulusLength);
    default:
      return undefined;
  }
}

function octetsOf(bits: number | undefined): number | undefined {
  return bits === undefined ? undefined : Math.ceil(bits / 8);
}
