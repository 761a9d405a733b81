/** Builds tokens by hand for attack tests: any header, any claims, signed with any key. */
import { createHmac, createPublicKey, type KeyObject, sign } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Gateway } from './fixture.js';

export function validClaims(
  gw: Gateway,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: gw.config.issuer,
    sub: 'acme',
    client_id: 'acme',
    aud: gw.config.audience,
    iat: now,
    nbf: now,
    exp: now + 600,
    jti: `forged-${Math.random().toString(36).slice(2)}`,
    scope: 'orders:read orders:write',
    ...overrides,
  };
}

/** Signs with the gateway's own signing key (so only what we change is wrong). */
export function signWithGatewayKey(
  gw: Gateway,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const key = gw.keyRing.signingKey;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header } as never)
    .sign(key.privateKey);
}

export function signWith(
  key: KeyObject,
  alg: string,
  claims: Record<string, unknown>,
  header: Record<string, unknown>,
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg, typ: 'at+jwt', ...header } as never)
    .sign(key);
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** `alg: none` with an empty signature (RFC 7519 §6.1 unsecured JWT). */
export function unsecuredToken(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
): string {
  return `${b64({ alg: 'none', typ: 'at+jwt', ...header })}.${b64(claims)}.`;
}

/** HS256 keyed with the gateway's public key PEM: the classic algorithm-confusion forgery. */
export function hmacWithPublicKey(gw: Gateway, claims: Record<string, unknown>): string {
  const pem = createPublicKey(gw.keyRing.signingKey.privateKey).export({
    type: 'spki',
    format: 'pem',
  });
  const input = `${b64({ alg: 'HS256', kid: gw.keyRing.signingKey.kid, typ: 'at+jwt' })}.${b64(claims)}`;
  const sig = createHmac('sha256', pem).update(input).digest('base64url');
  return `${input}.${sig}`;
}

/** ES256 over exactly the header given, bypassing jose's own header checks (e.g. for `crit`). */
export function signRawWithGatewayKey(
  gw: Gateway,
  claims: Record<string, unknown>,
  header: Record<string, unknown>,
): string {
  const key = gw.keyRing.signingKey;
  const input = `${b64({ alg: 'ES256', kid: key.kid, typ: 'at+jwt', ...header })}.${b64(claims)}`;
  const sig = sign('sha256', Buffer.from(input), {
    key: key.privateKey,
    dsaEncoding: 'ieee-p1363',
  });
  return `${input}.${sig.toString('base64url')}`;
}
