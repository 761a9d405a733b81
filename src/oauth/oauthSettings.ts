/**
 * The standard OAuth 2.0 surface's settings as the discovery documents read them, derived
 * from the frozen config in one place: the URLs from `issuer` (`endpointUrls.ts`), the
 * methods and algorithms from what client authentication accepts.
 */
import { ASSERTION_ALGS, AUTH_METHODS, TLS_METHODS } from '../clients/oauthClientFields.js';
import type { Config } from '../config/types.js';
import { endpointUrl } from './endpointUrls.js';

export interface OAuthSettings {
  readonly enabled: boolean;
  /** What endpoint paths and resource prefixes are appended to: `issuer` without a trailing `/`. */
  readonly publicBaseUrl: string;
  readonly tokenPath: string;
  readonly revocationPath: string;
  readonly introspectionPath: string;
  /** Client authentication methods of the token, revocation and introspection endpoints. */
  readonly authMethods: readonly string[];
  /** `alg` values accepted in `private_key_jwt` assertions. */
  readonly assertionAlgorithms: readonly string[];
  /** Tokens are bound to the request's client certificate (RFC 8705 §3, §3.3). */
  readonly certificateBoundTokens: boolean;
  /** `oauth.mtlsBaseUrl` without a trailing `/` (RFC 8705 §5), or null. */
  readonly mtlsBaseUrl: string | null;
}

export function oauthSettingsOf(
  config: Pick<Config, 'issuer' | 'oauth' | 'clientCertificate'>,
): OAuthSettings {
  // Without a source of client certificates, RFC 8705's methods cannot succeed.
  const certificates = config.clientCertificate.source !== 'none';
  return {
    enabled: config.oauth.enabled,
    publicBaseUrl: endpointUrl(config, ''),
    tokenPath: config.oauth.tokenPath,
    revocationPath: config.oauth.revocationPath,
    introspectionPath: config.oauth.introspectionPath,
    authMethods: certificates ? AUTH_METHODS : AUTH_METHODS.filter((m) => !TLS_METHODS.includes(m)),
    assertionAlgorithms: ASSERTION_ALGS,
    certificateBoundTokens: certificates,
    mtlsBaseUrl: config.oauth.mtlsBaseUrl?.replace(/\/+$/, '') ?? null,
  };
}
