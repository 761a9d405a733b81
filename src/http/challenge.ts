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
import type { CompiledRoute } from '../proxy/routeTable.js';

/** What the challenge reads of the request (the request scope has it). */
export interface ChallengedRequest {
  readonly target: RequestTarget | null;
  readonly route: CompiledRoute | null;
}

/** The URL of the RFC 9728 document for the request's route (or path). */
export type ResourceMetadataUrl = (path: string | undefined, route: CompiledRoute | null) => string;

const REALM = 'Bearer realm="portaria"';

export class EdgeChallenge {
  readonly #resourceMetadata: ResourceMetadataUrl | null;

  constructor(resourceMetadata: ResourceMetadataUrl | null) {
    this.#resourceMetadata = resourceMetadata;
  }

  /** The edge's challenges; `discovery` present: the OAuth surface is on. */
  static of(discovery: OAuthDiscovery | undefined): EdgeChallenge {
    return new EdgeChallenge(
      discovery === undefined ? null : (path, route) => discovery.resourceMetadataUrl(path, route),
    );
  }

  /** The challenge for `error`, or undefined when it asks for no credentials. */
  header(error: PortariaError, request: ChallengedRequest): string | undefined {
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
