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
 */

import type { OAuthDiscovery } from '../documents/oauthDiscovery.js';
import type { RequestTarget } from '../domain/requestPath.js';
import type { PortariaError } from '../errors.js';
import type { AuthScheme } from '../pipeline/accessRequest.js';
import type { CompiledRoute } from '../proxy/routeTable.js';

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

export class EdgeChallenge {
  readonly #resourceMetadata: ResourceMetadataUrl | null;
  /** With DPoP on: `DPoP algs="…"` (RFC 9449 §7.1); null: Bearer only. */
  readonly #dpop: string | null;

  constructor(
    resourceMetadata: ResourceMetadataUrl | null,
    dpopAlgorithms: readonly string[] = [],
  ) {
    this.#resourceMetadata = resourceMetadata;
    this.#dpop = dpopAlgorithms.length === 0 ? null : `DPoP algs="${dpopAlgorithms.join(' ')}"`;
  }

  /**
   * The edge's challenges; `discovery` present: the OAuth surface is on; `dpopAlgorithms`
   * with DPoP on.
   */
  static of(
    discovery: OAuthDiscovery | undefined,
    dpopAlgorithms: readonly string[] = [],
  ): EdgeChallenge {
    return new EdgeChallenge(
      discovery === undefined ? null : (path, route) => discovery.resourceMetadataUrl(path, route),
      dpopAlgorithms,
    );
  }

  /**
   * The challenge for `error`, or undefined when it asks for no credentials. With DPoP on,
   * a request without credentials is offered both schemes; one that came with `DPoP`, or a
   * failed proof, is answered in the DPoP scheme (RFC 9449 §7.1), with the same error.
   */
  header(error: PortariaError, request: ChallengedRequest): string | undefined {
    const bearer = this.#bearer(error, request);
    const dpop = this.#dpop;
    if (dpop === null) return bearer;
    if (error.code === 'dpop-proof-invalid') return `${dpop}, error="invalid_dpop_proof"`;
    if (bearer === undefined) return undefined;
    if (error.code === 'token-missing') return `${bearer}, ${dpop}`;
    if (request.scheme !== 'dpop') return bearer;
    const code = /error="([a-z_]+)"/.exec(bearer)?.[1];
    return code === undefined ? dpop : `${dpop}, error="${code}"`;
  }

  #bearer(error: PortariaError, request: ChallengedRequest): string | undefined {
    let challenge: string;
    switch (error.code) {
      case 'token-missing':
        challenge = REALM;
        break;
      case 'token-invalid':
      case 'token-expired':
      case 'token-revoked':
      case 'token-binding-failed':
      case 'token-binding-required':
        challenge = `${REALM}, error="invalid_token"`;
        break;
      case 'insufficient-scope': {
        const needed = request.route?.scopes.join(' ') ?? '';
        challenge = `${REALM}, error="insufficient_scope", scope="${needed}"`;
        break;
      }
      default:
        return undefined;
    }
    if (this.#resourceMetadata === null) return challenge;
    const url = this.#resourceMetadata(request.target?.path, request.route);
    return `${challenge}, resource_metadata="${quotable(url)}"`;
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
