/**
 * `profile: fapi-br` (docs/fapi.md): the settings FAPI 1.0 Advanced, as Brazil's Open
 * Finance and Open Insurance use it, leaves no choice about. Each contradiction is one
 * problem named by its setting, all reported together with the other rules'.
 *
 * Runs on the input as written, before the schema fills its defaults in: a route's
 * `requireCertificateBound: false` is refused only when written (absent, the profile
 * makes it true, completeConfig.ts), and so is a `token.lifetimeSeconds` outside
 * 300–900 (absent, the default 3600 is clamped to 900). An unwritten algorithm, a
 * certificate source or a TLS policy whose default contradicts the profile is refused
 * like a written one: which keys sign and what the listener negotiates are choices the
 * operator writes, never ones the profile makes behind their back.
 */

import type { Loose } from './looseValues.js';
import { mappings, section } from './looseValues.js';

/** Open Finance Brasil: access tokens of 5 to 15 minutes (short-lived, bound tokens). */
export const FAPI_MIN_LIFETIME_SECONDS = 300;
export const FAPI_MAX_LIFETIME_SECONDS = 900;
/** FAPI-BR signs with PS256 only (FAPI 1.0 Part 2 §8.6 allows PS256 or ES256). */
export const FAPI_ALGORITHM = 'PS256';

const AT = 'under profile fapi-br';

export function isFapiBr(config: Loose): boolean {
  return config.profile === 'fapi-br';
}

export function profileProblems(config: Loose): string[] {
  if (!isFapiBr(config)) return [];
  const problems: string[] = [];
  const token = section(config.token);
  const algorithm = token.algorithm ?? 'ES256';
  if (algorithm !== FAPI_ALGORITHM) {
    problems.push(
      `token.algorithm: must be PS256 ${AT} (is ${JSON.stringify(algorithm)}${token.algorithm === undefined ? ', the default' : ''})`,
    );
  }
  const lifetime = token.lifetimeSeconds;
  if (
    typeof lifetime === 'number' &&
    (lifetime < FAPI_MIN_LIFETIME_SECONDS || lifetime > FAPI_MAX_LIFETIME_SECONDS)
  ) {
    problems.push(
      `token.lifetimeSeconds: must be from ${FAPI_MIN_LIFETIME_SECONDS} to ${FAPI_MAX_LIFETIME_SECONDS} ${AT} (is ${lifetime})`,
    );
  }
  for (const [i, route] of mappings(config.routes)) {
    if (route.requireCertificateBound === false) {
      problems.push(
        `routes[${i}].requireCertificateBound: must not be false ${AT} (every route takes certificate-bound tokens only)`,
      );
    }
  }
  if (section(config.upstream).default !== null) {
    const fallback = section(section(config.upstream).default);
    if (fallback.requireCertificateBound === false) {
      problems.push(
        `upstream.default.requireCertificateBound: must not be false ${AT} (every route takes certificate-bound tokens only)`,
      );
    }
  }
  const source = section(config.clientCertificate).source ?? 'none';
  if (source === 'none') {
    problems.push(
      `clientCertificate.source: must be tls or header ${AT} (mutual TLS binds every token, RFC 8705)`,
    );
  }
  const tls = section(section(config.server).tls);
  if (tls.enabled === true && (tls.policy ?? 'default') !== 'fapi') {
    problems.push(
      `server.tls.policy: must be fapi ${AT} (is ${JSON.stringify(tls.policy ?? 'default')}: FAPI 1.0 Part 2 §8.5 names the TLS 1.2 suites)`,
    );
  }
  // A trusted issuer's tokens pass the edge like ours: they must be PS256 too. The
  // schema's default (ES256, RS256) is refused as well: narrowing it is a choice of trust.
  for (const [i, issuer] of mappings(config.issuers)) {
    const algorithms = Array.isArray(issuer.algorithms) ? issuer.algorithms : ['ES256', 'RS256'];
    const others = algorithms.filter((a) => a !== FAPI_ALGORITHM);
    if (others.length > 0) {
      problems.push(
        `issuers[${i}].algorithms: must be [PS256] ${AT} (allows ${others.map((a) => JSON.stringify(a)).join(', ')}${issuer.algorithms === undefined ? ', the default' : ''})`,
      );
    }
  }
  return problems;
}
