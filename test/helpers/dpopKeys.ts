/** An ES256 key pair for DPoP proofs as WebCrypto keys (through PEM: keyPairs.ts), the public one extractable. */
import type { webcrypto } from 'node:crypto';
import { importPKCS8, importSPKI } from 'jose';
import { newKeyPair } from './keyPairs.js';

export async function dpopKeys(): Promise<webcrypto.CryptoKeyPair> {
  const pair = newKeyPair('ec', { namedCurve: 'P-256' });
  const privatePem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  return {
    privateKey: (await importPKCS8(privatePem, 'ES256')) as webcrypto.CryptoKey,
    publicKey: (await importSPKI(publicPem, 'ES256', { extractable: true })) as webcrypto.CryptoKey,
  } as webcrypto.CryptoKeyPair;
}
