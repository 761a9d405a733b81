/**
 * `server` and `admin`: each trusted proxy an address or CIDR range, and the admin
 * surface never on the public port.
 */
import { trustedProxyProblem } from '../lib/trustedProxies.js';
import { type Loose, section, strings } from './looseValues.js';

export function trustedProxyProblems(config: Loose): string[] {
  const problems: string[] = [];
  for (const [i, entry] of strings(section(config.server).trustedProxies)) {
    const problem = trustedProxyProblem(entry);
    if (problem !== null) problems.push(`server.trustedProxies[${i}]: ${problem}`);
  }
  return problems;
}

export function portProblems(config: Loose): string[] {
  const serverPort = section(config.server).port;
  const adminPort = section(config.admin).port;
  if (typeof serverPort === 'number' && serverPort !== 0 && serverPort === adminPort) {
    return ['admin.port: must differ from server.port (the admin surface is never public)'];
  }
  return [];
}
