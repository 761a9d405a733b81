/**
 * The opening step that reads a DPoP proof header (RFC 9449 §4.1) into the scope, with
 * `dpop.enabled`: the first value, how many `DPoP` lines came (more than one is refused
 * by the DPoP step), and the origin the client used, which the proof's `htu` must name
 * (§4.3 item 10): behind a trusted proxy its `X-Forwarded-Proto` and `X-Forwarded-Host`
 * (each one plain value), else the listener's scheme and the `Host` header. Without the
 * header, one property read.
 */
import type { IncomingMessage } from 'node:http';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import type { OpeningStep } from './openingSteps.js';

/** host [":" port], as the singleton-fields step accepts `Host`. */
const HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

function linesNamedDpop(raw: readonly string[]): number {
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'dpop') lines++;
  }
  return lines;
}

/** The client's `scheme://host`, or '' when it cannot be told (no proof can then match). */
export function requestOrigin(
  req: IncomingMessage,
  peerAddress: string | undefined,
  trustedProxies: TrustedProxies,
  listenerProto: 'http' | 'https',
): string {
  let proto: string = listenerProto;
  let host = req.headers.host;
  if (trustedProxies.trusts(peerAddress)) {
    const forwardedProto = req.headers['x-forwarded-proto'];
    if (forwardedProto === 'http' || forwardedProto === 'https') proto = forwardedProto;
    const forwardedHost = req.headers['x-forwarded-host'];
    if (typeof forwardedHost === 'string' && HOST.test(forwardedHost)) host = forwardedHost;
  }
  return host === undefined ? '' : `${proto}://${host}`;
}

export function dpopHeaderStep(
  trustedProxies: TrustedProxies,
  listenerProto: 'http' | 'https',
): OpeningStep {
  return (req, scope) => {
    const proof = req.headers.dpop;
    if (proof === undefined) return;
    scope.dpopProof = proof as string;
    scope.dpopProofLines = linesNamedDpop(req.rawHeaders);
    scope.origin = requestOrigin(req, scope.peerAddress, trustedProxies, listenerProto);
  };
}
