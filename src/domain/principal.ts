/**
 * The verified identity a request carries after bearer verification. This is the only
 * type the proxy layer sees of authentication.
 */
export interface Principal {
  /** `sub` claim; for tokens we issue, the client id. */
  readonly subject: string;
  /** `client_id` claim (RFC 9068), or `sub` when absent. */
  readonly clientId: string;
  /** Granted scopes, as issued (space-separated in the token). */
  readonly scope: string;
  readonly scopes: ReadonlySet<string>;
  /** `jti` claim. */
  readonly tokenId: string;
  /** `iss` claim. */
  readonly issuer: string;
  /** Bounded id of the trusted issuer (`self` for tokens we issued). */
  readonly issuerId: string;
  /** `iat` and `exp` claims, seconds since the epoch. */
  readonly issuedAt: number;
  readonly expiresAt: number;
  /** All verified claims, for the identity-header mapping. */
  readonly claims: Readonly<Record<string, unknown>>;
}

/**
 * The longest `jti` and client id a revocation can name (admin API, revocation log):
 * the verifier refuses a token whose ids it could not revoke.
 */
export const MAX_TOKEN_ID_LENGTH = 512;
export const MAX_CLIENT_ID_LENGTH = 256;

/** 1 to `max` characters, no control characters: an id a revocation can name. */
export function isRevocableId(value: string, max: number): boolean {
  return value.length > 0 && value.length <= max && !CONTROL.test(value);
}

const CONTROL = /\p{Cc}/u;
