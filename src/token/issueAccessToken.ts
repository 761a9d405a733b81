/**
 * Step "issue" of the token operation: signs a JWT access token per RFC 9068 — header
 * `typ: at+jwt`, `alg`, `kid`; claims `iss`, `sub` and `client_id` (the client id),
 * `aud`, `iat`, `nbf`, `exp`, `jti` (128 random bits), `scope` (space-separated).
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { SigningKey } from '../keys/keyRing.js';
import { type Clock, epochSeconds } from '../lib/clock.js';

export interface IssuedToken {
  readonly token: string;
  readonly tokenId: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
  readonly lifetimeSeconds: number;
  readonly scope: string;
}

export interface IssueInput {
  readonly clientId: string;
  readonly scope: string;
  readonly lifetimeSeconds: number;
}

export async function issueAccessToken(
  key: SigningKey,
  settings: { readonly issuer: string; readonly audience: string; readonly clock: Clock },
  input: IssueInput,
): Promise<IssuedToken> {
  const issuedAt = epochSeconds(settings.clock);
  const expiresAt = issuedAt + input.lifetimeSeconds;
  const tokenId = randomBytes(16).toString('base64url');
  const token = await new SignJWT({ client_id: input.clientId, scope: input.scope })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(settings.issuer)
    .setSubject(input.clientId)
    .setAudience(settings.audience)
    .setIssuedAt(issuedAt)
    .setNotBefore(issuedAt)
    .setExpirationTime(expiresAt)
    .setJti(tokenId)
    .sign(key.privateKey);
  return {
    token,
    tokenId,
    issuedAt,
    expiresAt,
    lifetimeSeconds: input.lifetimeSeconds,
    scope: input.scope,
  };
}
