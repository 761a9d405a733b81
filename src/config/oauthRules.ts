/**
 * `oauth`: its endpoints on paths of their own (not one the gateway already answers, not
 * each other's), assertion audiences as URLs, a Redis replay store only with Redis, the
 * mTLS aliases' origin (RFC 8705 §5) only with a source of client certificates.
 */
import { type Loose, strings, text } from './looseValues.js';
import { checkUrl } from './urlRules.js';

/** The paths the gateway answers itself besides the OAuth endpoints. */
const OTHER_OPEN_PATHS = [
  '/v1/authentication/accesstoken',
  '/.well-known/jwks.json',
  '/v1/openapi.json',
];

export function oauthProblems(
  oauth: Loose,
  redisTarget: unknown,
  certificateSource: unknown = 'none',
): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const key of ['tokenPath', 'revocationPath', 'introspectionPath']) {
    const path = text(oauth[key]);
    if (path === null) continue;
    if (OTHER_OPEN_PATHS.includes(path) || path.startsWith('/.well-known/')) {
      problems.push(`oauth.${key}: ${path} is a path the gateway already answers`);
    }
    const other = seen.get(path);
    if (other !== undefined) problems.push(`oauth.${key}: same path as oauth.${other}`);
    seen.set(path, key);
  }
  for (const [i, audience] of strings(oauth.assertionAudiences)) {
    checkUrl(problems, `oauth.assertionAudiences[${i}]`, audience, ['http:', 'https:']);
  }
  const mtlsBaseUrl = text(oauth.mtlsBaseUrl);
  if (mtlsBaseUrl !== null) {
    const url = checkUrl(problems, 'oauth.mtlsBaseUrl', mtlsBaseUrl, ['https:']);
    if (url !== null && (url.pathname !== '/' || url.search || url.hash || url.username)) {
      problems.push('oauth.mtlsBaseUrl: must be https://host[:port], without a path');
    }
    // RFC 8705 §5: the aliases are where client certificates are presented.
    if (certificateSource !== 'tls' && certificateSource !== 'header') {
      problems.push('oauth.mtlsBaseUrl: needs clientCertificate.source (tls or header)');
    }
  }
  if (oauth.replayStore === 'redis' && redisTarget === null) {
    problems.push(
      'oauth.replayStore: "redis" needs redis.url, redis.sentinel.nodes or redis.cluster.nodes (or PORTARIA_REDIS_URL)',
    );
  }
  return problems;
}
