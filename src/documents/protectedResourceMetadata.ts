/**
 * Protected-resource metadata (RFC 9728 §2) for the resources behind the gateway: the
 * gateway as a whole (`<base>`, every route's scopes) and each route (`<base><prefix>`,
 * its own scopes), each at the well-known path derived from its identifier (§3.1).
 * Built from the route table and settings only, never from a request.
 */

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** What the documents need of a route. */
export interface ResourceRoute {
  readonly prefix: string;
  readonly scopes: readonly string[];
  /** Only certificate-bound tokens pass there (RFC 8705 §3). */
  readonly requireCertificateBound?: boolean;
}

export interface ProtectedResourceDocument {
  /** Where it is served (canonical request path). */
  readonly path: string;
  /** The resource identifier, `<base><prefix>`. */
  readonly resource: string;
  readonly document: Readonly<Record<string, unknown>>;
}

/**
 * The metadata path of the resource `<base><prefix>` (`/`: the gateway as a whole): the
 * well-known segment between the host and the identifier's path (RFC 9728 §3.1), so an
 * issuer with a path (`https://host/tenant`) has its resources' documents under it too.
 */
export function protectedResourceMetadataPath(baseUrl: string, prefix: string): string {
  const basePath = new URL(baseUrl).pathname.replace(/\/+$/, '');
  return WELL_KNOWN + basePath + (prefix === '/' ? '' : prefix);
}

/**
 * One document for the gateway and one per route with a prefix of its own (a route at `/`
 * is the gateway's). `authorizationServers`: issuer identifiers whose tokens are accepted.
 */
export function protectedResourceDocuments(
  baseUrl: string,
  authorizationServers: readonly string[],
  routes: readonly ResourceRoute[],
  dpopAlgorithms: readonly string[] = [],
): ProtectedResourceDocument[] {
  const describe = (
    prefix: string,
    scopes: readonly string[],
    bound: boolean,
  ): ProtectedResourceDocument => {
    const resource = prefix === '/' ? baseUrl : baseUrl + prefix;
    return {
      path: protectedResourceMetadataPath(baseUrl, prefix),
      resource,
      document: {
        resource,
        authorization_servers: authorizationServers,
        scopes_supported: scopes,
        // RFC 6750 §2.1 only: the form body and the query are not accepted (§2.2, §2.3).
        bearer_methods_supported: ['header'],
        // RFC 9728 §2: the resource accepts only mutual-TLS certificate-bound tokens.
        ...(bound ? { tls_client_certificate_bound_access_tokens: true } : {}),
        // RFC 9728 §2: the proof algorithms this resource accepts (DPoP on).
        ...(dpopAlgorithms.length > 0 ? { dpop_signing_alg_values_supported: dpopAlgorithms } : {}),
      },
    };
  };
  const everyScope = [...new Set(routes.flatMap((route) => route.scopes))].sort();
  const perRoute = new Map<string, ProtectedResourceDocument>();
  for (const route of routes) {
    if (route.prefix === '/' || perRoute.has(route.prefix)) continue;
    perRoute.set(
      route.prefix,
      describe(route.prefix, route.scopes, route.requireCertificateBound === true),
    );
  }
  // The gateway as a whole requires bound tokens when every route does.
  const allBound = routes.length > 0 && routes.every((r) => r.requireCertificateBound === true);
  return [describe('/', everyScope, allBound), ...perRoute.values()];
}
