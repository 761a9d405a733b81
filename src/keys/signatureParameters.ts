/**
 * How Node's synchronous `crypto.sign`/`crypto.verify` compute a JWS signature for an
 * algorithm (RFC 7518 §3, RFC 8037 §3.1): the digest, and the key with its options —
 * ECDSA signatures as r‖s (`ieee-p1363`, RFC 7518 §3.4), RSASSA-PSS with MGF1 and a salt
 * as long as the digest (RFC 7518 §3.5). The key must be of the type the algorithm names
 * (P-256 for ES256, …; RSA of at least 2048 bits, RFC 7518 §3.3): any other pairing is a
 * programming error (our keys and the issuers' keys are bound to one `alg` when they are
 * loaded), thrown as a TypeError, never a signature over the wrong primitive. An
 * RSASSA-PSS key restricted to parameters other than the algorithm's is such a key.
 *
 * Worked out once per key and remembered for as long as the key lives.
 */
import { constants, type KeyObject } from 'node:crypto';

export interface SignatureParameters {
  readonly alg: string;
  /** The digest for `crypto.sign`/`crypto.verify`; null for EdDSA (RFC 8032 hashes inside). */
  readonly digest: string | null;
  /** The key and its options, as `crypto.sign`/`crypto.verify` take them. */
  readonly key: {
    readonly key: KeyObject;
    readonly dsaEncoding?: 'ieee-p1363';
    readonly padding?: number;
    readonly saltLength?: number;
  };
  /**
   * What `crypto.sign`/`crypto.verify` take as the key: the bare KeyObject wherever no
   * option is needed (ECDSA with DER signatures, `ecdsaDer.ts`; RSASSA-PKCS1-v1_5,
   * OpenSSL's default for RSA; EdDSA; an RSASSA-PSS key whose parameters are the
   * algorithm's, which OpenSSL applies by itself, `rsaPssKey.ts`), else `key`. Node 24
   * throws and catches two TypeErrors per call to tell an options object from a
   * KeyObject (bench/RESULTS.md).
   */
  readonly keyArgument: KeyObject | SignatureParameters['key'];
  /** ECDSA: octets of r and of s in the JWS signature (RFC 7518 §3.4); null otherwise. */
  readonly ecdsaIntegerLength: number | null;
}

const MIN_RSA_BITS = 2048;

interface Rule {
  readonly digest: string | null;
  /** RSASSA-PSS: octets of the digest, which is also the salt's length (RFC 7518 §3.5). */
  readonly digestLength?: number;
  /** Key types (`asymmetricKeyType`) the algorithm accepts. */
  readonly types: readonly string[];
  readonly curve?: string;
  /** ECDSA: octets of each of r and s (the curve's order). */
  readonly integerLength?: number;
  readonly pss?: true;
}

const RULES: Readonly<Record<string, Rule>> = {
  ES256: { digest: 'sha256', types: ['ec'], curve: 'prime256v1', integerLength: 32 },
  ES384: { digest: 'sha384', types: ['ec'], curve: 'secp384r1', integerLength: 48 },
  ES512: { digest: 'sha512', types: ['ec'], curve: 'secp521r1', integerLength: 66 },
  EdDSA: { digest: null, types: ['ed25519', 'ed448'] },
  RS256: { digest: 'sha256', types: ['rsa'] },
  RS384: { digest: 'sha384', types: ['rsa'] },
  RS512: { digest: 'sha512', types: ['rsa'] },
  PS256: { digest: 'sha256', digestLength: 32, types: ['rsa', 'rsa-pss'], pss: true },
  PS384: { digest: 'sha384', digestLength: 48, types: ['rsa', 'rsa-pss'], pss: true },
  PS512: { digest: 'sha512', digestLength: 64, types: ['rsa', 'rsa-pss'], pss: true },
};

const byKey = new WeakMap<KeyObject, SignatureParameters>();

/** The parameters for signing or verifying with `key` under `alg`; throws a TypeError for a key the algorithm does not use. */
export function signatureParameters(alg: string, key: KeyObject): SignatureParameters {
  const known = byKey.get(key);
  if (known !== undefined && known.alg === alg) return known;
  const rule = RULES[alg];
  if (rule === undefined) throw new TypeError(`unsupported JWS algorithm ${alg}`);
  const type = key.asymmetricKeyType ?? key.type;
  const details = key.asymmetricKeyDetails;
  if (
    !rule.types.includes(type) ||
    (rule.curve !== undefined && details?.namedCurve !== rule.curve) ||
    (type.startsWith('rsa') && (details?.modulusLength ?? 0) < MIN_RSA_BITS) ||
    (type === 'rsa-pss' && !pssAllows(rule, details))
  ) {
    throw new TypeError(`a ${describe(key)} key cannot be used with ${alg}`);
  }
  // The key's own parameters are exactly the algorithm's: OpenSSL needs no option.
  const pssKeyDecides =
    type === 'rsa-pss' &&
    details?.hashAlgorithm === rule.digest &&
    details?.mgf1HashAlgorithm === rule.digest &&
    details?.saltLength === rule.digestLength;
  const options = Object.freeze(
    rule.curve !== undefined
      ? { key, dsaEncoding: 'ieee-p1363' as const }
      : rule.pss === true
        ? {
            key,
            padding: constants.RSA_PKCS1_PSS_PADDING,
            saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
          }
        : rule.types[0] === 'rsa'
          ? { key, padding: constants.RSA_PKCS1_PADDING }
          : { key },
  );
  const parameters: SignatureParameters = Object.freeze({
    alg,
    digest: rule.digest,
    key: options,
    keyArgument: rule.pss === true && !pssKeyDecides ? options : key,
    ecdsaIntegerLength: rule.integerLength ?? null,
  });
  byKey.set(key, parameters);
  return parameters;
}

/**
 * Whether an RSASSA-PSS key's parameters (none: any) allow the rule's digest for the
 * message and MGF1 and a salt of the digest's length (RFC 8017 A.2.3).
 */
function pssAllows(rule: Rule, details: KeyObject['asymmetricKeyDetails']): boolean {
  if (details?.hashAlgorithm === undefined) return true;
  return (
    details.hashAlgorithm === rule.digest &&
    details.mgf1HashAlgorithm === rule.digest &&
    (details.saltLength ?? 0) <= (rule.digestLength ?? 0)
  );
}

function describe(key: KeyObject): string {
  const details = key.asymmetricKeyDetails;
  const size = details?.namedCurve ?? details?.modulusLength;
  return size === undefined
    ? String(key.asymmetricKeyType ?? key.type)
    : `${key.asymmetricKeyType} ${size}`;
}
