/**
 * `clientCertificate`: a header is read only from trusted proxies, so `source: header`
 * without `server.trustedProxies` could never yield a certificate; the header's name may
 * be neither a header the gateway manages nor an identity header it sets. (CRLs without
 * CA files, for either source: `tlsRules.ts`.)
 */
import { headerKey } from './callerHeaders.js';
import { RESERVED_HEADERS } from './headerRules.js';
import { type Loose, section, strings, text } from './looseValues.js';

export function clientCertificateProblems(config: Loose): string[] {
  const problems: string[] = [];
  const certificate = section(config.clientCertificate);
  if (certificate.source !== 'header') return problems;
  if (strings(section(config.server).trustedProxies).length === 0) {
    problems.push(
      'clientCertificate.source: header is read only from server.trustedProxies, which is empty (list the TLS-terminating proxy)',
    );
  }
  const name = text(section(certificate.header).name);
  if (name !== null) {
    const key = headerKey(name);
    // The identity headers, and their default names, which stay reserved under any mapping.
    const identity = ['x-client-id', 'x-token-scope', 'x-token-jti'];
    for (const header of Object.values(section(config.identityHeaders))) {
      if (typeof header === 'string') identity.push(headerKey(header));
    }
    if (RESERVED_HEADERS.has(key) || identity.includes(key) || key === 'client-cert-chain') {
      problems.push(`clientCertificate.header.name: "${name}" is a header the gateway manages`);
    }
  }
  return problems;
}
