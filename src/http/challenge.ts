/**
 * The `WWW-Authenticate` challenge of a refusal at the edge (RFC 6750 §3, RFC 9110
 * §11.6.1), written here and nowhere else, from the failure's code and the request:
 *
 *   token-missing                          Bearer realm="portaria"  (no credentials came,
 *                                          so no error code, §3.1)
 *   token-invalid, -expired, -revoked,     …, error="invalid_token"
 *   token-binding-failed, -required
 *   insufficient-scope                     …, error="insufficient_scope",
 *                                          scope="<the scopes the route requires>"
 *
 * With the OAuth surface on, `resource_metadata` (RFC 9728 §5.1) names the metadata of the
 * route serving the request. Any other refusal asks for no credentials: no challenge.
 *
 * With DPoP on, the DPoP scheme's challenge (RFC 9449 §7.1) beside or instead of Bearer;
 * with its server nonces on, every refusal offering DPoP carries a fresh nonce in
 * `DPoP-Nonce` (§9), and a proof without a current one is told `use_dpop_nonce`.
 */

import type { OAuthDiscovery } from '../documents/oauthDiscovery.js';
import type { RequestTarget } from '../domain/requestPath.js';
import type { PortariaError } from '../errors.js';
import type { AuthScheme } from '../pipeline/accessRequest.js';
import type { CompiledRoute } from '../proxy/routeTable.js';
import type { DpopNonces } from '../verify/dpopNonces.js';

/** What the challenge reads of the request (the request scope has it). */
export interface ChallengedRequest {
  readonly target: RequestTarget | null;
  readonly route: CompiledRoute | null;
  /** The scheme the credentials came in, once the credentials step accepted them. */
  readonly scheme?: AuthScheme | undefined;
}

/** The URL of the RFC 9728 document for the request's route (or path). */
export type ResourceMetadataUrl = (path: string | undefined, route: CompiledRoute | null) => string;

const REALM = 'Bearer realm="portaria"';

/** What a refusal at the edge says about credentials: `WWW-Authenticate` and `DPoP-Nonce`. */
export interface RefusalChallenge {
  readonly challenge: string | undefined;
  readonly dpopNonce: string | undefined;
}

export class EdgeChallenge {
  readonly #resourceMetadata: ResourceMetadataUrl | null;
  /** With DPoP on: `DPoP algs="…"` (RFC 9449 §7.1); null: Bearer only. */
  readonly #dpop: string | null;
  readonly #nonces: DpopNonces | null;

  constructor(
    resourceMetadata: ResourceMetadataUrl | null,
    dpopAlgorithms: readonly string[] = [],
    nonces: DpopNonces | null = null,
  ) {
    this.#resourceMetadata = resourceMetadata;
    this.#dpop = dpopAlgorithms.length === 0 ? null : `DPoP algs="${dpopAlgorithms.join(' ')}"`;
    this.#nonces = this.#dpop === null ? null : nonces;
  }

  /**
   * The edge's challenges; `discovery` present: the OAuth surface is on; `dpopAlgorithms`
   * with DPoP on.
   */
  static of(
    discovery: OAuthDiscovery | undefined,
    dpopAlgorithms: readonly string[] = [],
    nonces: DpopNonces | null = null,
  ): EdgeChallenge {
    return new EdgeChallenge(
      discovery === undefined ? null : (path, route) => discovery.resourceMetadataUrl(path, route),
      dpopAlgorithms,
      nonces,
    );
  }

  /** The challenge, and with server nonces a fresh one beside any challenge offering DPoP. */
  refusal(error: PortariaError, request: ChallengedRequest): RefusalChallenge {
    const challenge = this.header(error, request);
    const nonces = this.#nonces;
    const offersDpop = nonces !== null && challenge?.includes('DPoP algs=') === true;
    return { challenge, dpopNonce: offersDpop ? nonces.current() : undefined };
  }

  /**
   * The challenge for `error`, or undefined when it asks for no credentials. With DPoP on,
   * a request without credentials is offered both schemes; one that came with `DPoP`, or a
   * failed proof, is answered in the DPoP scheme (RFC 9449 §7.1), with the same error.
   */
  header(error: PortariaError, request: ChallengedRequest): string | undefined {
    const dpop = this.#dpop;
    if (dpop !== null && error.code === 'dpop-proof-invalid') {
      const nonceMissing = error.reason === 'dpop-nonce' && this.#nonces !== null;
      return `${dpop}, error="${nonceMissing ? 'use_dpop_nonce' : 'invalid_dpop_proof'}"`;
    }
    const code = errorCodeOf(error);
    if (code === undefined) return undefined;
    const bearer = this.#bearer(code, request);
    if (dpop === null) return bearer;
    if (code === null) return `${bearer}, ${dpop}`;
    return request.scheme === 'dpop' ? `${dpop}, error="${code}"` : bearer;
  }

  #bearer(code: ChallengeError | null, request: ChallengedRequest): string {
    let challenge = REALM;
    if (code === 'invalid_token') challenge += ', error="invalid_token"';
    else if (code === 'insufficient_scope') {
      const needed = request.route?.scopes.join(' ') ?? '';
      challenge += `, error="insufficient_scope", scope="${needed}"`;
    }
    if (this.#resourceMetadata === null) return challenge;
    const url = this.#resourceMetadata(request.target?.path, request.route);
    return `${challenge}, resource_metadata="${quotable(url)}"`;
  }
}

/** The RFC 6750 §3.1 error codes the edge's challenges carry. */
type ChallengeError = 'invalid_token' | 'insufficient_scope';

/**
 * The challenge's error for `error`: null when it asks for credentials without one (none
 * came, RFC 6750 §3.1), undefined when the refusal asks for no credentials at all.
 */
function errorCodeOf(error: PortariaError): ChallengeError | null | undefined {
  switch (error.code) {
    case 'token-missing':
      return null;
    case 'token-invalid':
    case 'token-expired':
    case 'token-revoked':
    case 'token-binding-failed':
    case 'token-binding-required':
      return 'invalid_token';
    case 'insufficient-scope':
      return 'insufficient_scope';
    default:
      return undefined;
  }
}

/** A URL safe inside a quoted-string (RFC 9110 §5.6.4): `"` and `\` percent-encoded. */
function quotable(url: string): string {
  return url.replaceAll('"', '%22').replaceAll('\\', '%5C');
}

/**
 * The OAuth endpoints' challenge: a 401 to a request that sent `Authorization` (HTTP
 * Basic, RFC 6749 §2.3.1 and §5.2, RFC 7617 §2) asks for Basic again; nothing else does.
 */
export function basicChallenge(
  error: PortariaError,
  authorization: string | undefined,
): string | undefined {
  return error.status === 401 && authorization !== undefined ? BASIC : undefined;
}

const BASIC = 'Basic realm="portaria"';
