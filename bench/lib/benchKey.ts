/**
 * The signing key every server of a bench run shares: one ES256 key written to a keys
 * directory the gateway loads (`gateway.js --keys-dir`), its public key as a PEM file for
 * the peers (HAProxy's `jwt_verify`, the jose verifier), and a minter that signs tokens
 * with the gateway's claims (RFC 9068: `typ: at+jwt`, `kid`, iss, sub, client_id, aud,
 * iat, nbf, exp, jti, scope), so a peer and the gateway verify the very same tokens.
 */
import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, sign } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { BENCH_AUDIENCE, BENCH_CLIENT_ID, BENCH_ISSUER, BENCH_SCOPE } from './benchClaims.js';

export interface BenchKey {
  readonly kid: string;
  readonly keysDir: string;
  /** PKCS #8 PEM of the private key, in `keysDir`. */
  readonly privateKeyFile: string;
  /** SPKI PEM of the public key. */
  readonly publicKeyFile: string;
  readonly privateKey: KeyObject;
}

export interface TokenClaims {
  readonly issuer?: string;
  readonly audience?: string;
  /** Seconds from now; negative for an expired token. */
  readonly expiresInS?: number;
  readonly clientId?: string;
}

export async function createBenchKey(dir: string): Promise<BenchKey> {
  const keysDir = join(dir, 'keys');
  await mkdir(keysDir, { recursive: true });
  const generated = await generateSigningKey('ES256', new Date());
  const privateKeyFile = await writeSigningKey(keysDir, generated);
  const privateKey = createPrivateKey(generated.pem);
  const publicKeyFile = join(dir, 'public.pem');
  await writeFile(
    publicKeyFile,
    createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }) as string,
  );
  return { kid: generated.kid, keysDir, privateKeyFile, publicKeyFile, privateKey };
}

/** A signed token (`crypto.sign`: synchronous, so 100,000 of them take seconds, not minutes). */
export function mintToken(key: BenchKey, claims: TokenClaims = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const clientId = claims.clientId ?? BENCH_CLIENT_ID;
  const expiresIn = claims.expiresInS ?? 3600;
  const issuedAt = Math.min(now, now + expiresIn - 60);
  const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${segment({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })}.${segment({
    client_id: clientId,
    scope: BENCH_SCOPE,
    iss: claims.issuer ?? BENCH_ISSUER,
    sub: clientId,
    aud: claims.audience ?? BENCH_AUDIENCE,
    iat: issuedAt,
    nbf: issuedAt,
    exp: now + expiresIn,
    jti: randomBytes(16).toString('base64url'),
  })}`;
  // JWS ES256 signatures are R || S, not DER (RFC 7518 §3.4).
  const signature = sign('sha256', Buffer.from(input), {
    key: key.privateKey,
    dsaEncoding: 'ieee-p1363',
  });
  return `${input}.${signature.toString('base64url')}`;
}

/** `count` distinct valid tokens, one per line in `file` (read by the wrk Lua scripts). */
export async function mintTokenFile(key: BenchKey, count: number, file: string): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) tokens.push(mintToken(key));
  await writeFile(file, `${tokens.join('\n')}\n`);
  return tokens;
}
