/**
 * Which certificate, if any, a token issued to `client` is bound to (RFC 8705 §3.1): a
 * request that came with a certificate verified against the configured client CAs gets
 * a token carrying that certificate's `x5t#S256`, at the contract's operation and at
 * `/oauth2/token` alike; a request without one gets a bearer token, unless the client
 * requires a certificate (`requireCertificate`, or `requireCertificateBound`): then 401.
 *
 * A certificate that came but is not verified (expired, not yet valid, from another CA,
 * revoked) is refused, never silently ignored: the partner meant to be bound. The one
 * exception, a self-signed certificate proven by the client's own keys
 * (`self_signed_tls_client_auth`, RFC 8705 §2.2), is decided by the OAuth client
 * authentication, which passes that certificate as `proven`.
 */
import type { ClientRecord } from '../clients/clientRegistry.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { verifiedCertificate } from '../domain/verifiedCertificate.js';

/** The thumbprint to bind to, or undefined for a bearer token; throws the refusal. */
export function boundThumbprint(
  client: Pick<ClientRecord, 'requireCertificate'>,
  certificate: ClientCertificate | null,
  proven: ClientCertificate | null = null,
): string | undefined {
  if (proven !== null) return proven.thumbprint;
  if (certificate === null && !client.requireCertificate) return undefined;
  return verifiedCertificate(certificate).thumbprint;
}
