/**
 * `issuers`: ids unique, each `issuer` trusted once (ours included), exactly one key
 * source, and a remote key set over https unless on loopback or explicitly allowed.
 */
import { type Loose, mappings, repeated, text } from './looseValues.js';
import { checkUpstream, isLoopbackHost } from './urlRules.js';

export function issuerProblems(config: Loose): string[] {
  const problems: string[] = [];
  const issuer = text(config.issuer);
  const issuerIds = new Set<string>();
  const issuerValues = new Set<string>(issuer === null ? [] : [issuer]);
  for (const [i, entry] of mappings(config.issuers)) {
    const at = `issuers[${i}]`;
    const id = text(entry.id);
    if (repeated(issuerIds, id)) problems.push(`${at}.id: duplicate issuer id "${id}"`);
    const value = text(entry.issuer);
    if (repeated(issuerValues, value)) {
      problems.push(
        `${at}.issuer: "${value}" is already trusted (our own issuer or another entry)`,
      );
    }
    // Present in any form counts (a value of the wrong type is the schema's problem).
    const sources =
      (entry.jwksUri !== undefined && entry.jwksUri !== null ? 1 : 0) +
      (entry.keyFile !== undefined && entry.keyFile !== null ? 1 : 0);
    const jwksUri = text(entry.jwksUri);
    if (sources !== 1) problems.push(`${at}: set exactly one of jwksUri and keyFile`);
    if (jwksUri) {
      checkUpstream(problems, `${at}.jwksUri`, jwksUri);
      // These keys decide whom the gateway trusts: fetched in the clear, anyone on the path
      // can hand it their own. Loopback (a sidecar, tests) is not on a network path.
      if (
        URL.canParse(jwksUri) &&
        new URL(jwksUri).protocol === 'http:' &&
        !isLoopbackHost(new URL(jwksUri).hostname) &&
        entry.allowPlainHttp !== true
      ) {
        problems.push(
          `${at}.jwksUri: must use https (the key set decides whom the gateway trusts); for a network you trust set ${at}.allowPlainHttp: true`,
        );
      }
    }
  }
  return problems;
}
