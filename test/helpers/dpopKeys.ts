/** An ES256 key pair for DPoP proofs as WebCrypto keys (through PEM: keyPairs.ts), the public one extractable; and proofs made with it. */
import { type KeyObject, randomUUID, type webcrypto } from 'node:crypto';
import { exportJWK, importPKCS8, importSPKI, SignJWT } from 'jose';
import { accessTokenHash } from '../../src/verify/dpopProof.js';
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

export interface ProofClaims {
  /** The access token the proof names (`ath`, RFC 9449 §4.2), for a resource request. */
  readonly token?: string | undefined;
  readonly jti?: string | undefined;
  readonly nonce?: string | undefined;
  /** Seconds since the epoch (default now). */
  readonly iat?: number | undefined;
}

/** A WebCrypto pair (dpopKeys) or Node's KeyObjects (keyPairs.ts). */
export interface ProofKeys {
  readonly privateKey: webcrypto.CryptoKey | KeyObject;
  readonly publicKey: webcrypto.CryptoKey | KeyObject;
}

/** An ES256 proof of `keys` for `method` `url` (§4.2: typ, jwk, htm, htu, iat, jti[, ath, nonce]). */
export async function dpopProof(
  keys: ProofKeys,
  method: string,
  url: string,
  claims: ProofClaims = {},
): Promise<string> {
  const jwk = await exportJWK(keys.publicKey);
  return new SignJWT({
    htm: method,
    htu: url,
    jti: claims.jti ?? randomUUID(),
    ...(claims.nonce === undefined ? {} : { nonce: claims.nonce }),
    ...(claims.token === undefined ? {} : { ath: accessTokenHash(claims.token) }),
  })
    .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk })
    .setIssuedAt(claims.iat ?? Math.floor(Date.now() / 1000))
    .sign(keys.privateKey);
}

/** A DPoP-bound token for `clientId` from `baseUrl`'s `/oauth2/token`, with a proof of `keys`. */
export async function dpopBoundToken(
  baseUrl: string,
  keys: ProofKeys,
  clientId: string,
  clientSecret: string,
): Promise<string> {
  const url = `${baseUrl}/oauth2/token`;
  const issued = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      dpop: await dpopProof(keys, 'POST', url),
    },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }).toString(),
  });
  const body = (await issued.json()) as { token_type?: string; access_token?: string };
  if (issued.status !== 200 || body.token_type !== 'DPoP' || body.access_token === undefined) {
    throw new Error(`no DPoP-bound token: ${issued.status} ${JSON.stringify(body)}`);
  }
  return body.access_token;
}
