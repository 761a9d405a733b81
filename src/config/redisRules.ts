/**
 * `redis` and the stores that need it: a redis(s) URL, its password in one place only,
 * and `revocation.store` / `tokenLimits.store: redis` only with a URL.
 */
import { isMapping, type Loose, section } from './looseValues.js';
import { checkUrl } from './urlRules.js';

/**
 * `redis.url` as given: a string to check, null when absent, and undefined when the
 * `redis` section is not a mapping (the schema's problem: no rule reads it then).
 */
export function redisUrlOf(config: Loose): unknown {
  return config.redis === undefined || isMapping(config.redis)
    ? (section(config.redis).url ?? null)
    : undefined;
}

export function redisProblems(config: Loose, redisUrl: unknown): string[] {
  const problems: string[] = [];
  if (typeof redisUrl === 'string') {
    checkUrl(problems, 'redis.url', redisUrl, ['redis:', 'rediss:']);
    // Two passwords: which one ioredis uses is not something to leave to its option merge.
    const passwordFile = section(config.redis).passwordFile;
    if (urlPassword(redisUrl) !== '' && typeof passwordFile === 'string')
      problems.push('redis.passwordFile: redis.url carries a password too; give it in one place');
  }
  if (section(config.revocation).store === 'redis' && redisUrl === null) {
    problems.push('revocation.store: "redis" needs redis.url (or PORTARIA_REDIS_URL)');
  }
  if (section(config.tokenLimits).store === 'redis' && redisUrl === null) {
    problems.push('tokenLimits.store: "redis" needs redis.url (or PORTARIA_REDIS_URL)');
  }
  return problems;
}

/** The password a Redis URL carries (userinfo or a `password` query parameter), or ''. */
export function urlPassword(value: string): string {
  if (!URL.canParse(value)) return '';
  const url = new URL(value);
  return url.password || url.searchParams.get('password') || '';
}
