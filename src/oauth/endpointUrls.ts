/**
 * The absolute URLs of the OAuth 2.0 endpoints, derived from `issuer` and the configured
 * paths (RFC 8414 §3: the metadata names the same ones), and the audiences a client
 * assertion may name (RFC 7523 §3: the token endpoint URL; OpenID Connect Core §9 also
 * allows the issuer).
 */
import type { Config } from '../config/types.js';

/** `issuer` without trailing slashes, then `path`. */
export function endpointUrl(config: Pick<Config, 'issuer'>, path: string): string {
  return config.issuer.replace(/\/+$/, '') + path;
}

export function tokenEndpointUrl(config: Pick<Config, 'issuer' | 'oauth'>): string {
  return endpointUrl(config, config.oauth.tokenPath);
}

/**
 * `oauth.assertionAudiences`, or by default the token endpoint URL, its mTLS alias when
 * `oauth.mtlsBaseUrl` is set (RFC 8705 §5: a client may post its assertion there), and
 * the issuer.
 */
export function assertionAudiences(config: Pick<Config, 'issuer' | 'oauth'>): ReadonlySet<string> {
  if (config.oauth.assertionAudiences.length > 0) return new Set(config.oauth.assertionAudiences);
  const alias = config.oauth.mtlsBaseUrl?.replace(/\/+$/, '');
  return new Set([
    tokenEndpointUrl(config),
    ...(alias === undefined ? [] : [alias + config.oauth.tokenPath]),
    config.issuer,
  ]);
}
