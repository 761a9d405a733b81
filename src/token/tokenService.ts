/**
 * The token operation after the HTTP layer has checked the method and media type, read
 * the bounded body and parsed it against the schema (`parseTokenRequest`, once: the
 * limits need its clientId first): client authentication → issue → shape.
 *
 * Unknown client, wrong secret, disabled client and expired secret are one public
 * answer (401 invalid-client, same detail); the private reason goes to the log and
 * metrics only. The client authenticator does the same work in each case.
 */
import type { AuthenticationResult, ClientAuthenticator } from '../clients/authenticateClient.js';
import type { ClientRecord } from '../clients/clientRegistry.js';
import { SECRET_METHODS } from '../clients/oauthClientFields.js';
import type { Profile, ResponseFieldSet } from '../config/types.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { PortariaError } from '../errors.js';
import type { SigningKey } from '../keys/keyRing.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import { boundThumbprint } from './certificateBinding.js';
import { type IssuedToken, issueAccessToken } from './issueAccessToken.js';
import type { TokenRequest } from './parseTokenRequest.js';
import { shapeTokenResult } from './shapeTokenResult.js';

/** Under fapi-br every token of the contract's operation is bound (RFC 8705 §3). */
const FAPI_CLIENT = { requireCertificate: true } as const;

export interface TokenServiceOptions {
  readonly authenticate: () => ClientAuthenticator;
  readonly signingKey: () => SigningKey;
  readonly issuer: string;
  readonly audience: string;
  readonly defaultLifetimeSeconds: number;
  readonly responseFields: ResponseFieldSet;
  readonly clock: Clock;
  /** The client's revocation cut-off (epoch seconds), if any (`RevocationStore.clientCutoff`). */
  readonly clientCutoff?: (clientId: string) => number | undefined;
  /** `profile` of the configuration: `fapi-br` changes which clients take a secret here. */
  readonly profile?: Profile;
}

/**
 * Observes an exchange's steps (tracing): called as `authenticate_client` or `sign`
 * starts, it returns the function that ends the step, with the reason it failed.
 */
export type ExchangeSteps = (step: 'authenticate_client' | 'sign') => (failure?: string) => void;

export interface TokenExchange {
  readonly clientId: string;
  readonly issued: IssuedToken;
  readonly body: object;
}

export class TokenService {
  readonly #options: TokenServiceOptions;

  readonly #fapiBr: boolean;
  readonly #fapi2: boolean;

  constructor(options: TokenServiceOptions) {
    this.#options = options;
    this.#fapiBr = options.profile === 'fapi-br';
    this.#fapi2 = options.profile === 'fapi2';
  }

  /**
   * A client's `authMethods` hold here too: the contract's operation takes a secret, so a
   * client allowing no secret method (private_key_jwt only) is refused, after the secret
   * check, as at the OAuth endpoints. Under fapi-br `authMethods` lists the OAuth
   * endpoints' FAPI methods only, and the secret stays this operation's credential, taken
   * only beside a verified certificate the token is bound to (docs/fapi.md).
   */
  #takesSecret(client: ClientRecord): boolean {
    // Under fapi2 too: its clients get sender-constrained tokens only (issueTo refuses a
    // request with neither a DPoP proof nor a certificate), the secret being the contract's.
    return (
      this.#fapiBr || this.#fapi2 || client.authMethods.some((m) => SECRET_METHODS.includes(m))
    );
  }

  /**
   * Authenticates a parsed token request (`parseTokenRequest`) and issues its token,
   * bound to `certificate` when one came (`certificateBinding.ts`).
   */
  async exchange(
    request: TokenRequest,
    certificate: ClientCertificate | null,
    steps?: ExchangeSteps,
    dpopKey?: string,
  ): Promise<TokenExchange> {
    const authenticated = steps?.('authenticate_client');
    let result: AuthenticationResult;
    try {
      result = await this.#options.authenticate()(request.clientId, request.clientSecret);
    } catch (error) {
      authenticated?.('error');
      throw error;
    }
    const reason = !result.ok
      ? result.reason
      : this.#takesSecret(result.client)
        ? undefined
        : 'auth-method-not-allowed';
    authenticated?.(reason);
    if (!result.ok || reason !== undefined) {
      throw new PortariaError('invalid-client', 'The client credentials were not accepted.', {
        reason: reason ?? 'error',
      });
    }
    const { client } = result;
    // After the secret: a stranger learns nothing of a client's certificate rules.
    const thumbprint = boundThumbprint(this.#fapiBr ? FAPI_CLIENT : client, certificate);
    const issued = this.issueTo(
      client,
      client.scope,
      this.#options.audience,
      steps,
      thumbprint,
      dpopKey,
    );
    return {
      clientId: client.id,
      issued,
      body: shapeTokenResult(this.#options.responseFields, issued),
    };
  }

  /**
   * Issues a token to an authenticated client, with `scope` (the client's or fewer) and
   * `audience`, bound to the certificate of `certificateThumbprint` when given; the same
   * signer, claims and lifetime rules as the contract's operation.
   */
  issueTo(
    client: ClientRecord,
    scope: string,
    audience: string,
    steps?: ExchangeSteps,
    certificateThumbprint?: string,
    dpopKey?: string,
  ): IssuedToken {
    this.#refuseWhileRevoking(client.id);
    if (
      client.requireSenderConstrained &&
      certificateThumbprint === undefined &&
      dpopKey === undefined
    ) {
      // Before signing: a bearer token of this client would be refused at the edge anyway.
      throw new PortariaError(
        'invalid-request',
        'This client receives sender-constrained tokens only: send a DPoP proof or a client certificate.',
        { reason: 'not-sender-constrained', oauth: 'invalid_request' },
      );
    }
    const signed = steps?.('sign');
    try {
      const token = issueAccessToken(
        this.#options.signingKey(),
        { issuer: this.#options.issuer, audience, clock: this.#options.clock },
        {
          clientId: client.id,
          scope,
          lifetimeSeconds: client.lifetimeSeconds ?? this.#options.defaultLifetimeSeconds,
          ...(certificateThumbprint === undefined ? {} : { certificateThumbprint }),
          ...(dpopKey === undefined ? {} : { dpopKey }),
        },
      );
      signed?.();
      return token;
    } catch (error) {
      signed?.('error');
      throw error;
    }
  }

  /**
   * A client revoked with a cut-off that still lies ahead (the admin API's default is now
   * + clock skew, to cover tokens stamped by clocks running ahead) would get a token that
   * is refused on first use: answer 503 with Retry-After until the cut-off has passed.
   */
  #refuseWhileRevoking(clientId: string): void {
    const cutoff = this.#options.clientCutoff?.(clientId);
    if (cutoff === undefined) return;
    const now = epochSeconds(this.#options.clock);
    if (cutoff < now) return;
    throw new PortariaError(
      'service-unavailable',
      "This client's tokens are being revoked; retry after the seconds given in Retry-After.",
      {
        reason: 'client-revocation-pending',
        headers: { 'retry-after': String(cutoff - now + 1) },
      },
    );
  }
}
