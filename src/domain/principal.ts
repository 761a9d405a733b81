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
 * The longest `jti` a revocation can name (admin API, revocation log): the verifier
 * refuses a token whose ids it could not revoke. Client ids follow `clientId.ts`.
 */
export const MAX_TOKEN_ID_LENGTH = 512;

/**
 * 1 to `max` characters, no control characters, no lone surrogates: a token id a
 * revocation can name. A lone surrogate has no UTF-8 form: Redis would store U+FFFD in
 * its place, and a replica loading the list would then hold a different id.
 */
export function isRevocableId(value: string, max: number): boolean {
  return value.length > 0 && value.length <= max && !CONTROL_OR_LONE_SURROGATE.test(value);
}

/** True when `value` has no lone surrogate, i.e. it has a UTF-8 form. */
export function isWellFormedText(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}

const LONE_SURROGATE = /\p{Cs}/u;
/** `Cc`, or `Cs`: with the `u` flag a surrogate matches only when it is not half of a pair. */
const CONTROL_OR_LONE_SURROGATE = /[\p{Cc}\p{Cs}]/u;
