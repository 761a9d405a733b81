/** Key material for the key tests: real keys of every supported (and some refused) kind. */
import type { KeyObject } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SigningAlgorithm } from '../../src/config/types.js';
import { newKeyPair } from '../helpers/keyPairs.js';

export function newPrivateKey(alg: SigningAlgorithm): KeyObject {
  if (alg === 'ES256') return newKeyPair('ec', { namedCurve: 'P-256' }).privateKey;
  if (alg === 'EdDSA') return newKeyPair('ed25519').privateKey;
  if (alg === 'PS256') return newPs256Key();
  return newKeyPair('rsa', { modulusLength: 2048 }).privateKey;
}

/**
 * A key as a JWK file holds it: a JWK has no RSASSA-PSS form, so a PS256 JWK is a plain
 * RSA key with `"alg": "PS256"` (RFC 7518 §6.3).
 */
export function newJwkPrivateKey(alg: SigningAlgorithm): KeyObject {
  return alg === 'PS256'
    ? newKeyPair('rsa', { modulusLength: 2048 }).privateKey
    : newPrivateKey(alg);
}

/** An RSASSA-PSS key restricted to PS256 (SHA-256, MGF1 with SHA-256, 32-octet salt), as `keys generate` writes. */
export function newPs256Key(modulusLength = 2048): KeyObject {
  const options = { modulusLength, hashAlgorithm: 'sha256', mgf1HashAlgorithm: 'sha256' };
  return newKeyPair('rsa-pss', { ...options, saltLength: 32 }).privateKey;
}

export function pkcs8(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }) as string;
}

export async function writePem(dir: string, kid: string, key: KeyObject): Promise<void> {
  await writeFile(join(dir, `${kid}.pem`), pkcs8(key), { mode: 0o600 });
}

export async function writeJwk(
  dir: string,
  kid: string,
  key: KeyObject,
  extra: Record<string, unknown>,
): Promise<void> {
  const jwk = { ...key.export({ format: 'jwk' }), ...extra };
  await writeFile(join(dir, `${kid}.jwk.json`), JSON.stringify(jwk), { mode: 0o600 });
}
