/**
 * `routes` and `upstream.default`: ids and prefixes unique (prefixes ignoring ASCII case,
 * as they match), prefixes canonical, upstreams plain http(s) origins.
 */
import { type Loose, mappings, repeated, section, text } from './looseValues.js';
import { checkUpstream } from './urlRules.js';

export function routeProblems(config: Loose): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  const prefixes = new Set<string>();
  for (const [i, route] of mappings(config.routes)) {
    const at = `routes[${i}]`;
    const id = text(route.id);
    if (repeated(ids, id)) problems.push(`${at}.id: duplicate route id "${id}"`);
    const prefix = text(route.prefix);
    if (prefix !== null) {
      // Prefixes match ASCII case-insensitively (proxy/routeTable.ts): compare them so.
      const folded = prefix.replace(/[A-Z]/g, (c) => c.toLowerCase());
      if (repeated(prefixes, folded))
        problems.push(`${at}.prefix: duplicate prefix "${prefix}" (prefixes ignore case)`);
      const prefixProblem = prefixIssue(prefix);
      if (prefixProblem) problems.push(`${at}.prefix: ${prefixProblem}`);
    }
    const upstream = text(route.upstream);
    if (upstream !== null) checkUpstream(problems, `${at}.upstream`, upstream);
  }
  if (ids.has('default')) {
    problems.push('routes: the id "default" is reserved for upstream.default');
  }
  const fallback = text(section(section(config.upstream).default).upstream);
  if (fallback !== null) checkUpstream(problems, 'upstream.default.upstream', fallback);
  return problems;
}

/** Why a route prefix is not a canonical path (same rules as request paths), or null. */
function prefixIssue(prefix: string): string | null {
  if (prefix.length > 1 && prefix.endsWith('/')) return 'must not end with "/"';
  if (prefix.includes('//')) return 'must not contain "//"';
  if (/[%\\?#\s]/.test(prefix)) return 'must not contain "%", "\\", "?", "#" or spaces';
  if (prefix.split('/').some((s) => s === '.' || s === '..'))
    return 'must not contain dot segments';
  return null;
}
