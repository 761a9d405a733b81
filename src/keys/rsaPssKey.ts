/**
 * Our PS256 keys in one form: an RSASSA-PSS key (`id-RSASSA-PSS`, RFC 4055 §3.1, RFC 8017
 * A.2.3) whose parameters say SHA-256, MGF1 with SHA-256 and a 32-octet salt — exactly
 * PS256 (RFC 7518 §3.5). OpenSSL then signs and verifies with those parameters and no
 * other (it refuses PKCS#1 v1.5 padding, another hash and a shorter salt, and verifies a
 * salt of 32 octets only), so `crypto.sign`/`crypto.verify` take the bare KeyObject, which
 * Node 24 handles without the two thrown TypeErrors an options object costs it
 * (`signatureParameters.ts`), and a PS256 key can never make an RS256 signature.
 *
 * `ps256PrivateKey` turns an RSA key (`rsaEncryption`, from a JWK file) or an RSASSA-PSS
 * key whose parameters allow PS256 into that form by re-wrapping its RSAPrivateKey in a
 * PKCS#8 with the fixed PS256 AlgorithmIdentifier. `plainRsaPublicKey` goes the other way
 * for the JWKS (`plainRsaPrivateKey` for a private key): Node exports no JWK for an RSASSA-PSS key, and a JWK carries no PSS
 * parameters anyway (`kty: RSA`, `alg: PS256`, RFC 7518 §6.3). It reads only the DER
 * Node itself writes; it is no general ASN.1 parser.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

/** The salt length of PS256: the SHA-256 output length (RFC 7518 §3.5). */
export const PS256_SALT_LENGTH = 32;

/**
 * AlgorithmIdentifier { id-RSASSA-PSS, RSASSA-PSS-params { hashAlgorithm sha256,
 * maskGenAlgorithm mgf1SHA256, saltLength 32 } } (RFC 4055 §3.1), as OpenSSL writes it.
 */
const PS256_ALGORITHM = Buffer.from(
  '3041' +
    '06092a864886f70d01010a' + // id-RSASSA-PSS
    '3034' +
    'a00f300d06096086480165030402010500' + // [0] sha256
    'a11c301a06092a864886f70d010108300d06096086480165030402010500' + // [1] mgf1 sha256
    'a203020120', // [2] saltLength 32
  'hex',
);

/**
 * The PS256 form of `key` (an RSA or RSASSA-PSS private key). Throws an Error saying why
 * for an RSASSA-PSS key restricted to other parameters (another hash, or a minimum salt
 * over 32 octets).
 */
export function ps256PrivateKey(key: KeyObject): KeyObject {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa-pss') {
    const { hashAlgorithm, mgf1HashAlgorithm, saltLength } = details;
    if (isPs256(details)) return key;
    if (
      hashAlgorithm !== undefined &&
      (hashAlgorithm !== 'sha256' ||
        mgf1HashAlgorithm !== 'sha256' ||
        (saltLength ?? 0) > PS256_SALT_LENGTH)
    ) {
      throw new Error(
        `RSASSA-PSS key restricted to ${hashAlgorithm}, MGF1 with ${mgf1HashAlgorithm ?? 'sha1'}, salt ≥ ${saltLength ?? 20}: not a PS256 key (SHA-256, MGF1 with SHA-256, 32-octet salt)`,
      );
    }
  } else if (key.asymmetricKeyType !== 'rsa') {
    throw new Error(`a ${key.asymmetricKeyType ?? key.type} key is not an RSA key`);
  }
  const rsaPrivateKey =
    key.asymmetricKeyType === 'rsa'
      ? (key.export({ type: 'pkcs1', format: 'der' }) as Buffer)
      : pkcs8PrivateKeyOctets(key.export({ type: 'pkcs8', format: 'der' }) as Buffer);
  const pkcs8 = element(
    0x30,
    Buffer.concat([Buffer.from('020100', 'hex'), PS256_ALGORITHM, element(0x04, rsaPrivateKey)]),
  );
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
}

/** Whether an RSASSA-PSS key's parameters are exactly PS256's. */
export function isPs256(details: NonNullable<KeyObject['asymmetricKeyDetails']>): boolean {
  return (
    details.hashAlgorithm === 'sha256' &&
    details.mgf1HashAlgorithm === 'sha256' &&
    details.saltLength === PS256_SALT_LENGTH
  );
}

/** The RSA public key of an RSASSA-PSS key (public or private) as a plain `rsa` key. */
export function plainRsaPublicKey(key: KeyObject): KeyObject {
  const publicKey = key.type === 'public' ? key : createPublicKey(key);
  const spki = publicKey.export({ type: 'spki', format: 'der' }) as Buffer;
  // SubjectPublicKeyInfo ::= SEQUENCE { algorithm, subjectPublicKey BIT STRING } (RFC 5280).
  const outer = read(spki, 0, 0x30);
  const algorithm = read(spki, outer.start, 0x30);
  const bits = read(spki, algorithm.end, 0x03);
  // The BIT STRING's first octet counts unused bits: 0 for a DER RSAPublicKey.
  const rsaPublicKey = spki.subarray(bits.start + 1, bits.end);
  return createPublicKey({ key: rsaPublicKey, format: 'der', type: 'pkcs1' });
}

/** An RSASSA-PSS private key as a plain `rsa` key (the same RSAPrivateKey). */
export function plainRsaPrivateKey(key: KeyObject): KeyObject {
  const der = pkcs8PrivateKeyOctets(key.export({ type: 'pkcs8', format: 'der' }) as Buffer);
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs1' });
}

/** The privateKey OCTET STRING of a PKCS#8 PrivateKeyInfo (RFC 5208 §5). */
function pkcs8PrivateKeyOctets(der: Buffer): Buffer {
  const outer = read(der, 0, 0x30);
  const version = read(der, outer.start, 0x02);
  const algorithm = read(der, version.end, 0x30);
  const octets = read(der, algorithm.end, 0x04);
  return der.subarray(octets.start, octets.end);
}

/** The content range of the DER element of `tag` at `at` (X.690 §8.1). */
function read(der: Buffer, at: number, tag: number): { start: number; end: number } {
  if (der[at] !== tag) throw new Error('unexpected DER from Node');
  const first = der[at + 1] as number;
  let length = first;
  let start = at + 2;
  if (first >= 0x80) {
    const octets = first & 0x7f;
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + (der[start + i] as number);
    start += octets;
  }
  if (start + length > der.length) throw new Error('unexpected DER from Node');
  return { start, end: start + length };
}

/** A DER element: tag, definite length (short or long form), content. */
function element(tag: number, content: Buffer): Buffer {
  const length = content.length;
  let head: number[];
  if (length < 0x80) head = [tag, length];
  else if (length < 0x100) head = [tag, 0x81, length];
  else if (length < 0x10000) head = [tag, 0x82, length >> 8, length & 0xff];
  else head = [tag, 0x83, length >> 16, (length >> 8) & 0xff, length & 0xff];
  return Buffer.concat([Buffer.from(head), content]);
}
