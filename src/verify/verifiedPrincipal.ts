/**
 * The principal of a verified token, as the verified-token cache holds one per token: the
 * frozen claims, the trusted issuer and the shared scope set, with every other member
 * read from them. Three references where a plain object would hold ten: a cache of
 * 100 000 tokens is that much smaller (bench/RESULTS.md).
 */
import type { Principal } from '../domain/principal.js';
import type { SharedScope } from './scopeSets.js';

/** The verified claims; `sub`, `jti` strings and `iat`, `exp` numbers, as the verifier checked. */
type Claims = Readonly<Record<string, unknown>>;

export class VerifiedPrincipal implements Principal {
  readonly #claims: Claims;
  readonly #issuer: { readonly issuer: string; readonly id: string };
  readonly #scope: SharedScope;

  constructor(
    claims: Claims,
    issuer: { readonly issuer: string; readonly id: string },
    scope: SharedScope,
  ) {
    this.#claims = claims;
    this.#issuer = issuer;
    this.#scope = scope;
    Object.freeze(this);
  }

  get subject(): string {
    return this.#claims.sub as string;
  }

  get clientId(): string {
    const clientId = this.#claims.client_id;
    return typeof clientId === 'string' ? clientId : (this.#claims.sub as string);
  }

  get scope(): string {
    return this.#scope.text;
  }

  get scopes(): ReadonlySet<string> {
    return this.#scope.scopes;
  }

  get tokenId(): string {
    return this.#claims.jti as string;
  }

  get issuer(): string {
    return this.#issuer.issuer;
  }

  get issuerId(): string {
    return this.#issuer.id;
  }

  get issuedAt(): number {
    return this.#claims.iat as number;
  }

  get expiresAt(): number {
    return this.#claims.exp as number;
  }

  get claims(): Claims {
    return this.#claims;
  }
}
