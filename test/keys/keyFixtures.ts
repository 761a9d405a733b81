/** Key material for the key tests: real keys of every supported (and some refused) kind. */
import type { KeyObject } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SigningAlgorithm } from '../../src/config/types.js';
import { newKeyPair } from '../helpers/keyPairs.js';

export function newPrivateKey(alg: SigningAlgorithm): KeyObject {
  if (alg === 'ES256') return newKeyPair('ec', { namedCurve: 'P-256' }).privateKey;
  if (alg === 'EdDSA') return newKeyPair('ed25519').privateKey;
  return newKeyPair('rsa', { modulusLength: 2048 }).privateKey;
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
