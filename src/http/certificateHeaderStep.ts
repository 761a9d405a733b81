/**
 * The opening step that fills `scope.certificate` from a TLS-terminating proxy's header
 * (`clientCertificate.source: header`), on requests and WebSocket upgrades alike. The
 * header is read only when the TCP peer is one of `server.trustedProxies` (never
 * `X-Forwarded-For`: the proxy that terminated TLS is the one that connects); from any
 * other peer it is ignored, counted and never logged (a client can send it at will), and
 * the request has no certificate. Either way the header policy removes it before
 * anything is forwarded (`proxy/headers.ts`).
 *
 * The certificate field must come on one line (counted in the raw lines: Node joins
 * repeated lines with `, `, which in XFCC would read as one more element); RFC 9440's
 * chain is a List, which RFC 8941 §3.1 allows over several lines.
 *
 * Budget: without the header, one property read; with it from a trusted peer, the trust
 * lookup, a pass over the raw lines, and one cache lookup of the value
 * (`certificates/certificateHeaderReader.ts`).
 */
import type { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import { PortariaError } from '../errors.js';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { OpeningStep } from './openingSteps.js';

export interface CertificateHeaderStepDeps {
  readonly reader: CertificateHeaderReader;
  readonly trustedProxies: TrustedProxies;
  /** A certificate header arrived from a peer that is not a trusted proxy. */
  readonly ignored: () => void;
}

/** How many raw lines name `name` (lower case). */
function linesNamed(raw: readonly string[], name: string): number {
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i] as string;
    if (field.length === name.length && field.toLowerCase() === name) lines++;
  }
  return lines;
}

export function certificateHeaderStep(deps: CertificateHeaderStepDeps): OpeningStep {
  const { reader, trustedProxies, ignored } = deps;
  const name = reader.name;
  const chainName = reader.chainName;
  return (req, scope) => {
    const value = req.headers[name] as string | undefined;
    const chain = chainName === null ? undefined : (req.headers[chainName] as string | undefined);
    if (value === undefined && chain === undefined) return;
    if (!trustedProxies.trusts(scope.peerAddress)) {
      ignored();
      return;
    }
    if (value !== undefined && linesNamed(req.rawHeaders, name) > 1) {
      throw new PortariaError('invalid-request', `Send the ${name} header once.`, {
        reason: 'certificate-header-repeated',
      });
    }
    scope.certificate = reader.read(value, chain);
  };
}
