/**
 * The fields a TLS-terminating proxy uses to pass the client certificate on, and the
 * name each `clientCertificate.header.format` reads by default. Every field listed here,
 * and the configured `clientCertificate.header.name`, is removed from every forwarded
 * request and WebSocket handshake whatever `clientCertificate.source` is, in any case and
 * `_` spelling (`proxy/headers.ts`): an upstream that reads one of them must never see a
 * value the gateway did not check, least of all one a client wrote. Lowercase; why:
 * docs/security.md, "Client certificates from a proxy's header".
 */

/** The certificate field each format reads unless `clientCertificate.header.name` says. */
export const DEFAULT_CERTIFICATE_HEADER = {
  rfc9440: 'client-cert',
  xfcc: 'x-forwarded-client-cert',
  nginx: 'x-ssl-client-cert',
} as const;

export const CERTIFICATE_HEADERS: readonly string[] = Object.freeze([
  // RFC 9440 §2.2, §2.3.
  'client-cert',
  'client-cert-chain',
  // Envoy.
  'x-forwarded-client-cert',
  // nginx, by convention ($ssl_client_escaped_cert).
  'x-ssl-client-cert',
  // ingress-nginx (auth-tls-pass-certificate-to-upstream) and its verification fields.
  'ssl-client-cert',
  'ssl-client-verify',
  'ssl-client-subject-dn',
  'ssl-client-issuer-dn',
]);

/** Every certificate field removed before forwarding: the known ones and the configured one. */
export function certificateHeadersRemoved(configuredName: string): string[] {
  return [...new Set([...CERTIFICATE_HEADERS, configuredName.toLowerCase()])];
}
