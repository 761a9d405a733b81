/**
 * `quotas`: every policy meters something (a rate, a quota or both) in a time zone the
 * runtime knows; every route naming a policy names one that exists. A client's policy
 * (the clients file's `quota`) is checked against the same names when the clients file
 * loads (`clients/clientQuotas.ts`).
 */
import { isTimeZoneName } from '../lib/timeZones.js';
import { type Loose, mappings, section, text } from './looseValues.js';

export function quotaProblems(config: Loose): string[] {
  const problems: string[] = [];
  const policies = section(section(config.quotas).policies);
  for (const [name, value] of Object.entries(policies)) {
    const policy = section(value);
    const at = `quotas.policies.${name}`;
    if (policy.rate === undefined && policy.quota === undefined) {
      problems.push(`${at}: needs a rate, a quota or both`);
    }
    const zone = text(section(policy.quota).timeZone);
    if (zone !== null && !isTimeZoneName(zone)) {
      problems.push(`${at}.quota.timeZone: "${zone}" is not an IANA time zone this runtime knows`);
    }
  }
  const known = (name: string) => Object.hasOwn(policies, name);
  for (const [i, route] of mappings(config.routes)) {
    const name = text(route.quota);
    if (name !== null && !known(name)) {
      problems.push(`routes[${i}].quota: no policy "${name}" in quotas.policies`);
    }
  }
  const fallback = text(section(section(config.upstream).default).quota);
  if (fallback !== null && !known(fallback)) {
    problems.push(`upstream.default.quota: no policy "${fallback}" in quotas.policies`);
  }
  return problems;
}
