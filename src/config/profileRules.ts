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

/** FAPI 2.0 Security Profile §5.4.1: PS256, ES256 or EdDSA (Ed25519) only. */
export const FAPI2_ALGORITHMS: readonly string[] = ['PS256', 'ES256', 'EdDSA'];
/**
 * FAPI 2.0 §5.3.2.1 item 7: JWTs stamped up to 10 s ahead are accepted, more than 60 s
 * ahead refused: the clock skew (and the DPoP proof window) lies within.
 */
export const FAPI2_MIN_SKEW_SECONDS = 10;
export const FAPI2_MAX_SKEW_SECONDS = 60;

const AT2 = 'under profile fapi2';

export function profileProblems(config: Loose): string[] {
  if (config.profile === 'fapi2') return fapi2Problems(config);
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

/**
 * `profile: fapi2` (docs/fapi.md#fapi-20): sender-constrained tokens only (DPoP or mutual
 * TLS must be on, and no route may opt out), the FAPI 2.0 algorithms for our keys, the
 * trusted issuers and DPoP proofs, the clock skew within the profile's bounds, and TLS
 * with the fapi policy.
 */
function fapi2Problems(config: Loose): string[] {
  const problems: string[] = [];
  const token = section(config.token);
  const algorithm = token.algorithm ?? 'ES256';
  if (!FAPI2_ALGORITHMS.includes(algorithm as string)) {
    problems.push(
      `token.algorithm: must be PS256, ES256 or EdDSA ${AT2} (is ${JSON.stringify(algorithm)})`,
    );
  }
  const dpop = section(config.dpop);
  const source = section(config.clientCertificate).source ?? 'none';
  if (dpop.enabled !== true && source === 'none') {
    problems.push(
      `dpop.enabled: must be true, or clientCertificate.source tls or header, ${AT2} (every token is sender-constrained: DPoP or mutual TLS)`,
    );
  }
  if (Array.isArray(dpop.algorithms)) {
    const others = dpop.algorithms.filter((a) => !FAPI2_ALGORITHMS.includes(a as string));
    if (others.length > 0) {
      problems.push(
        `dpop.algorithms: only PS256, ES256 and EdDSA ${AT2} (lists ${others.join(', ')})`,
      );
    }
  } else if (dpop.enabled === true) {
    problems.push(
      `dpop.algorithms: list PS256, ES256 and/or EdDSA ${AT2} (the default adds ES384 and RS256)`,
    );
  }
  const skew = config.clockSkewSeconds ?? 60;
  if (
    typeof skew === 'number' &&
    (skew < FAPI2_MIN_SKEW_SECONDS || skew > FAPI2_MAX_SKEW_SECONDS)
  ) {
    problems.push(
      `clockSkewSeconds: must be from ${FAPI2_MIN_SKEW_SECONDS} to ${FAPI2_MAX_SKEW_SECONDS} ${AT2} (is ${skew})`,
    );
  }
  const window = dpop.proofWindowSeconds;
  if (typeof window === 'number' && window > FAPI2_MAX_SKEW_SECONDS) {
    problems.push(
      `dpop.proofWindowSeconds: at most ${FAPI2_MAX_SKEW_SECONDS} ${AT2} (is ${window})`,
    );
  }
  for (const [i, route] of mappings(config.routes)) {
    if (route.requireSenderConstrained === false) {
      problems.push(
        `routes[${i}].requireSenderConstrained: must not be false ${AT2} (every route takes sender-constrained tokens only)`,
      );
    }
  }
  if (section(config.upstream).default !== null) {
    if (section(section(config.upstream).default).requireSenderConstrained === false) {
      problems.push(
        `upstream.default.requireSenderConstrained: must not be false ${AT2} (every route takes sender-constrained tokens only)`,
      );
    }
  }
  const tls = section(section(config.server).tls);
  if (tls.enabled === true && (tls.policy ?? 'default') !== 'fapi') {
    problems.push(
      `server.tls.policy: must be fapi ${AT2} (is ${JSON.stringify(tls.policy ?? 'default')})`,
    );
  }
  for (const [i, issuer] of mappings(config.issuers)) {
    const algorithms = Array.isArray(issuer.algorithms) ? issuer.algorithms : ['ES256', 'RS256'];
    const others = algorithms.filter((a) => !FAPI2_ALGORITHMS.includes(a as string));
    if (others.length > 0) {
      problems.push(
        `issuers[${i}].algorithms: only PS256, ES256 and EdDSA ${AT2} (allows ${others.map((a) => JSON.stringify(a)).join(', ')}${issuer.algorithms === undefined ? ', the default' : ''})`,
      );
    }
  }
  return problems;
}
