/**
 * Key pairs for tests, generated as PEM and re-imported.
 *
 * Node 20's crypto can deadlock when a KeyObject taken straight from
 * `generateKeyPair(Sync)` is exported as JWK while a garbage collection destroys the key
 * generation job that shares its key data: the main thread blocks for ever in
 * `KeyGenJob::~KeyGenJob` under `KeyObjectHandle::ExportJWK` (seen with gdb on a hung
 * `npm test`, in test/keys/keyRing.test.js). Keys generated with a PEM encoding and
 * imported again share nothing with the job. `src/keys/generateKey.ts` does the same for
 * `portaria keys generate`; test/architecture/keyGeneration.test.ts keeps every other
 * file off the raw API.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';

export type KeyPairType = 'ec' | 'ed25519' | 'rsa' | 'rsa-pss';

export interface KeyPairOptions {
  readonly namedCurve?: string;
  readonly modulusLength?: number;
  /** RSASSA-PSS: the parameters the key is restricted to (none: unrestricted). */
  readonly hashAlgorithm?: string;
  readonly mgf1HashAlgorithm?: string;
  readonly saltLength?: number;
}

export function newKeyPair(
  type: KeyPairType,
  options: KeyPairOptions = {},
): { privateKey: KeyObject; publicKey: KeyObject } {
  const generate = generateKeyPairSync as (
    type: KeyPairType,
    options: KeyPairOptions & {
      privateKeyEncoding: { type: 'pkcs8'; format: 'pem' };
      publicKeyEncoding: { type: 'spki'; format: 'pem' };
    },
  ) => { privateKey: string; publicKey: string };
  const pair = generate(type, {
    ...options,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return {
    privateKey: createPrivateKey(pair.privateKey),
    publicKey: createPublicKey(pair.publicKey),
  };
}
