/**
 * Creates signing keys for `portaria keys generate` and `portaria keys rotate`.
 *
 * The kid is `<UTC YYYYMMDDTHHMMSSZ>-<8 hex>`: it sorts by creation time, which is how
 * the key ring picks the newest of the keys without a schedule entry as signer, and the
 * random suffix keeps two keys made in the same second apart. The key is written as a
 * PKCS#8 PEM, mode 0600, in a directory created with mode 0700; the write is atomic and
 * never replaces a file. Whether and when the key signs is the schedule's business
 * (`keySchedule.ts`), not this module's.
 *
 * RSA keys have 3072 bits: the 128-bit strength of SHA-256 and P-256 (NIST SP 800-57
 * Part 1, Table 2), where 2048 bits (112-bit, FAPI's minimum) is not to be used for new
 * signatures after 2030 and a key may sign for years. A PS256 key is an RSASSA-PSS key
 * restricted to PS256's parameters (`rsaPssKey.ts`), so its file says PS256 by itself;
 * an RS256 key is a plain RSA key, as RS256 key files always were.
 */
import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { SigningAlgorithm } from '../config/types.js';
import { writeNewFile } from '../lib/atomicWrite.js';
import { keyFileModel } from './keyFileModel.js';
import { KID_PATTERN } from './loadKeyRing.js';
import { PS256_SALT_LENGTH } from './rsaPssKey.js';

export interface GeneratedKey {
  readonly kid: string;
  /** PKCS#8 private key, PEM. */
  readonly pem: string;
}

const RSA_BITS = 3072;
const generate = promisify(generateKeyPair);

export async function generateSigningKey(alg: SigningAlgorithm, now: Date): Promise<GeneratedKey> {
  const encoding = { privateKeyEncoding: { type: 'pkcs8', format: 'pem' } } as const;
  const publicKeyEncoding = { type: 'spki', format: 'pem' } as const;
  let pair: { privateKey: string };
  if (alg === 'ES256') {
    pair = await generate('ec', { namedCurve: 'P-256', publicKeyEncoding, ...encoding });
  } else if (alg === 'EdDSA') {
    pair = await generate('ed25519', { publicKeyEncoding, ...encoding });
  } else if (alg === 'PS256') {
    pair = await generate('rsa-pss', {
      modulusLength: RSA_BITS,
      hashAlgorithm: 'sha256',
      mgf1HashAlgorithm: 'sha256',
      // @types/node declares a string here; Node takes the number of octets.
      saltLength: PS256_SALT_LENGTH as unknown as string,
      publicKeyEncoding,
      ...encoding,
    });
  } else {
    pair = await generate('rsa', { modulusLength: RSA_BITS, publicKeyEncoding, ...encoding });
  }
  return { kid: newKid(now), pem: pair.privateKey };
}

/** `20260101T000000Z-1a2b3c4d` */
export function newKid(now: Date): string {
  const stamp = now.toISOString().slice(0, 19).replace(/[-:]/g, '');
  return `${stamp}Z-${randomBytes(4).toString('hex')}`;
}

/**
 * Writes `<dir>/<kid>.pem` (0600, or the owner and permissions of the keys already there)
 * and returns its path; fails if the file exists.
 */
export async function writeSigningKey(dir: string, key: GeneratedKey): Promise<string> {
  if (!KID_PATTERN.test(key.kid)) throw new Error(`invalid kid ${JSON.stringify(key.kid)}`);
  return writeNewFile(dir, `${key.kid}.pem`, key.pem, await keyFileModel(dir));
}
