/**
 * Step "issue" of the token operation: signs a JWT access token per RFC 9068 — header
 * `typ: at+jwt`, `alg`, `kid`; claims `client_id`, `scope` (space-separated), `iss`,
 * `sub` (the client id), `aud`, `iat`, `nbf`, `exp`, `jti` (128 random bits), and for a
 * token bound to the client's certificate `cnf: {"x5t#S256": …}` (RFC 8705 §3.1), for
 * one bound to a DPoP key `cnf: {"jkt": …}` (RFC 9449 §6.1).
 *
 * The compact JWS (RFC 7515 §7.1) is written here, with the members in that order, and
 * signed by Node's synchronous `crypto.sign` on the key ring's KeyObject — a sixth of the
 * CPU of an asynchronous WebCrypto signature (bench/RESULTS.md). The protected header
 * is encoded once per key.
 */
import { randomBytes } from 'node:crypto';
import type { SigningKey } from '../keys/keyRing.js';
import { signJws } from '../keys/signJws.js';
import { type Clock, epochSeconds } from '../lib/clock.js';

export interface IssuedToken {
  readonly token: string;
  readonly tokenId: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
  readonly lifetimeSeconds: number;
  readonly scope: string;
  /** `cnf.x5t#S256` when the token is certificate-bound. */
  readonly certificateThumbprint: string | undefined;
  /** `cnf.jkt` when the token is DPoP-bound (RFC 9449 §6). */
  readonly dpopKey: string | undefined;
}

export interface IssueInput {
  readonly clientId: string;
  readonly scope: string;
  readonly lifetimeSeconds: number;
  /** The `x5t#S256` of the certificate the token is bound to (RFC 8705 §3.1); absent: bearer. */
  readonly certificateThumbprint?: string;
  /** The JWK thumbprint of the DPoP key the token is bound to (RFC 9449 §6.1); absent: none. */
  readonly dpopKey?: string;
}

/** `BASE64URL(UTF8(JWS Protected Header))` by signing key (a ring's keys live as long as it). */
const encodedHeaders = new WeakMap<SigningKey, string>();

function encodedHeader(key: SigningKey): string {
  let header = encodedHeaders.get(key);
  if (header === undefined) {
    header = base64url(JSON.stringify({ alg: key.alg, kid: key.kid, typ: 'at+jwt' }));
    encodedHeaders.set(key, header);
  }
  return header;
}

/** `jti`: 128 random bits (RFC 9068 §2.2, RFC 7519 §4.1.7). */
const TOKEN_ID_BYTES = 16;
/**
 * Random bytes are drawn from the CSPRNG for 256 ids at a time, as Node's `randomUUID`
 * batches its own: one `randomBytes` call costs as much as the rest of the claims. Each
 * id takes fresh bytes from the batch; no byte is used twice.
 */
const TOKEN_IDS_PER_DRAW = 256;
let tokenIdBytes = Buffer.alloc(0);
let tokenIdOffset = 0;

function nextTokenId(): string {
  if (tokenIdOffset === tokenIdBytes.length) {
    tokenIdBytes = randomBytes(TOKEN_ID_BYTES * TOKEN_IDS_PER_DRAW);
    tokenIdOffset = 0;
  }
  const start = tokenIdOffset;
  tokenIdOffset += TOKEN_ID_BYTES;
  return tokenIdBytes.toString('base64url', start, tokenIdOffset);
}

export function issueAccessToken(
  key: SigningKey,
  settings: { readonly issuer: string; readonly audience: string; readonly clock: Clock },
  input: IssueInput,
): IssuedToken {
  const issuedAt = epochSeconds(settings.clock);
  const expiresAt = issuedAt + input.lifetimeSeconds;
  const tokenId = nextTokenId();
  const claims = JSON.stringify({
    client_id: input.clientId,
    scope: input.scope,
    iss: settings.issuer,
    sub: input.clientId,
    aud: settings.audience,
    iat: issuedAt,
    nbf: issuedAt,
    exp: expiresAt,
    jti: tokenId,
    cnf: confirmation(input),
  });
  const signingInput = `${encodedHeader(key)}.${base64url(claims)}`;
  const signature = signJws(key.alg, key.privateKey, Buffer.from(signingInput, 'latin1'));
  return {
    token: `${signingInput}.${signature.toString('base64url')}`,
    tokenId,
    issuedAt,
    expiresAt,
    lifetimeSeconds: input.lifetimeSeconds,
    scope: input.scope,
    certificateThumbprint: input.certificateThumbprint,
    dpopKey: input.dpopKey,
  };
}

/** `cnf` (RFC 7800 §3.1): the certificate's thumbprint, the DPoP key's, both or none. */
function confirmation(input: IssueInput): Record<string, string> | undefined {
  const { certificateThumbprint, dpopKey } = input;
  if (certificateThumbprint === undefined && dpopKey === undefined) return undefined;
  return {
    ...(certificateThumbprint === undefined ? {} : { 'x5t#S256': certificateThumbprint }),
    ...(dpopKey === undefined ? {} : { jkt: dpopKey }),
  };
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}
