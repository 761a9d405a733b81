/**
 * The standard OAuth 2.0 surface's settings as the discovery, revocation and introspection
 * parts read them, derived from the frozen config in one place.
 */
import type { Config } from '../config/types.js';
import { issuerUrl } from './authorizationServerMetadata.js';

export interface OAuthSettings {
  readonly enabled: boolean;
  /** `scheme://host[:port]` the endpoints and resources are published under. */
  readonly publicBaseUrl: string | null;
  readonly tokenPath: string;
  readonly revocationPath: string;
  readonly introspectionPath: string;
  /** Client authentication methods of the token, revocation and introspection endpoints. */
  readonly authMethods: readonly string[];
  /** `alg` values accepted in `private_key_jwt` assertions. */
  readonly assertionAlgorithms: readonly string[];
}

export function oauthSettingsOf(config: Config): OAuthSettings {
  return {
    enabled: true,
    publicBaseUrl: issuerUrl(config.issuer)?.origin ?? null,
    tokenPath: '/oauth2/token',
    revocationPath: '/oauth2/revoke',
    introspectionPath: '/oauth2/introspect',
    authMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    assertionAlgorithms: ['ES256', 'RS256'],
  };
}
