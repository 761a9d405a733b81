/**
 * The authorization server metadata document (RFC 8414 §2) and where it is served (§3).
 * Built from settings only: no request value (never the Host header) reaches it, so every
 * replica serves the same document whatever name the client used.
 */

/** What the document says; the endpoint paths are joined to `baseUrl`. */
export interface AuthorizationServerSettings {
  /** Our `iss`, verbatim: §3.3 requires the document's `issuer` to equal it. */
  readonly issuer: string;
  /** `scheme://host[:port]` the endpoints are published under. */
  readonly baseUrl: string;
  readonly tokenPath: string;
  readonly revocationPath: string;
  readonly introspectionPath: string;
  readonly jwksPath: string;
  /** Client authentication methods of the three endpoints (RFC 8414 §2). */
  readonly authMethods: readonly string[];
  /** `alg` values accepted for `private_key_jwt` assertions (never `none`, §2). */
  readonly assertionAlgorithms: readonly string[];
  /** RFC 8705 §3.3 `tls_client_certificate_bound_access_tokens`; absent: false. */
  readonly certificateBoundTokens?: boolean;
  /** RFC 9449 §5.1 `dpop_signing_alg_values_supported` with DPoP on; absent or empty: off. */
  readonly dpopAlgorithms?: readonly string[];
  /** `scheme://host[:port]` of RFC 8705 §5's `mtls_endpoint_aliases`; absent or null: none. */
  readonly mtlsBaseUrl?: string | null;
  /** Scopes the routes require (the clients' own grants are not published). */
  readonly scopes: readonly string[];
  /** Resource identifiers this server issues tokens for (RFC 9728 §4). */
  readonly protectedResources: readonly string[];
}

const WELL_KNOWN = '/.well-known/oauth-authorization-server';

/**
 * The path of the document for `issuer` (RFC 8414 §3.1): the well-known segment goes
 * between the host and the issuer's path, whose terminating `/` is dropped. Null when
 * `issuer` is not an http(s) URL without query and fragment (§2): no document then.
 */
export function authorizationServerMetadataPath(issuer: string): string | null {
  const url = issuerUrl(issuer);
  if (url === null) return null;
  const path = url.pathname.replace(/\/+$/, '');
  return WELL_KNOWN + path;
}

/** `issuer` as an http(s) URL without query and fragment (RFC 8414 §2), or null. */
export function issuerUrl(issuer: string): URL | null {
  if (!URL.canParse(issuer)) return null;
  const url = new URL(issuer);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (url.search !== '' || url.hash !== '' || issuer.includes('?') || issuer.includes('#'))
    return null;
  return url;
}

export function authorizationServerMetadata(
  s: AuthorizationServerSettings,
): Record<string, unknown> {
  const endpointAuth = (name: string) => ({
    [`${name}_auth_methods_supported`]: s.authMethods,
    ...(s.authMethods.includes('private_key_jwt')
      ? { [`${name}_auth_signing_alg_values_supported`]: s.assertionAlgorithms }
      : {}),
  });
  return {
    issuer: s.issuer,
    token_endpoint: s.baseUrl + s.tokenPath,
    jwks_uri: s.baseUrl + s.jwksPath,
    scopes_supported: s.scopes,
    // The client credentials grant only: no authorization endpoint, so no response type.
    response_types_supported: [],
    grant_types_supported: ['client_credentials'],
    ...endpointAuth('token_endpoint'),
    revocation_endpoint: s.baseUrl + s.revocationPath,
    ...endpointAuth('revocation_endpoint'),
    introspection_endpoint: s.baseUrl + s.introspectionPath,
    ...endpointAuth('introspection_endpoint'),
    protected_resources: s.protectedResources,
    // RFC 8705 §3.3: a token issued with a client certificate is bound to it.
    ...(s.certificateBoundTokens === true
      ? { tls_client_certificate_bound_access_tokens: true }
      : {}),
    // RFC 9449 §5.1: the token endpoint binds tokens to the key of a DPoP proof.
    ...(s.dpopAlgorithms !== undefined && s.dpopAlgorithms.length > 0
      ? { dpop_signing_alg_values_supported: s.dpopAlgorithms }
      : {}),
    ...(typeof s.mtlsBaseUrl === 'string'
      ? {
          // RFC 8705 §5: the same endpoints where the client presents its certificate.
          mtls_endpoint_aliases: {
            token_endpoint: s.mtlsBaseUrl + s.tokenPath,
            revocation_endpoint: s.mtlsBaseUrl + s.revocationPath,
            introspection_endpoint: s.mtlsBaseUrl + s.introspectionPath,
          },
        }
      : {}),
  };
}
