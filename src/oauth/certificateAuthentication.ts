/**
 * Mutual-TLS client authentication (RFC 8705 §2): the request carries `client_id` only,
 * and the connection's client certificate is the credential.
 *
 *   tls_client_auth              (§2.1) a certificate a configured CA verified (verdict
 *                                `verified`), naming the client's registered identity
 *                                (`tlsClientAuth`, `certificateNames.ts`)
 *   self_signed_tls_client_auth  (§2.2) a certificate whose public key is one of the
 *                                client's registered keys (`jwksFile` / `jwksUri`): the
 *                                key's JWK must carry its RFC 7638 thumbprint as `kid`
 *                                (a PEM key file's keys get it), and of the client's
 *                                `assertionAlg`; then the keys themselves are compared.
 *                                No CA is involved, so any verdict is accepted but
 *                                `revoked`, and the certificate's dates are checked here
 *                                (OpenSSL reports a self-signed certificate as such
 *                                before it looks at its dates). The token is then bound
 *                                to this certificate (`proven`).
 *
 * A client allowing both tries `tls_client_auth` first when the certificate is verified.
 * Possession of the certificate's key was proven by the TLS handshake (ours, or the
 * trusted proxy's). Every refusal is `invalid_client` with the one description refused
 * credentials get; the reason is private.
 */
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { ClientRecord } from '../clients/clientRegistry.js';
import type { AuthMethod } from '../clients/oauthClientFields.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { verifiedCertificate } from '../domain/verifiedCertificate.js';
import { isPortariaError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { namesIdentity } from './certificateNames.js';
import { type ClientKeys, ClientKeysUnavailable } from './clientKeys.js';
import { credentialsRefused } from './oauthError.js';

export interface CertificateAuthenticated {
  readonly method: Extract<AuthMethod, 'tls_client_auth' | 'self_signed_tls_client_auth'>;
  /** The self-signed certificate the client's keys proved; null for `tls_client_auth`. */
  readonly proven: ClientCertificate | null;
}

/** Authenticates `client` by `certificate`; throws `invalid_client`. */
export async function authenticateByCertificate(
  client: ClientRecord,
  certificate: ClientCertificate,
  keys: ClientKeys,
  clock: Clock,
): Promise<CertificateAuthenticated> {
  const pki = client.authMethods.includes('tls_client_auth');
  const selfSigned = client.authMethods.includes('self_signed_tls_client_auth');
  if (!pki && !selfSigned) throw credentialsRefused('auth-method-not-allowed');
  if (pki && (certificate.verdict === 'verified' || !selfSigned)) {
    try {
      verifiedCertificate(certificate);
    } catch (error) {
      if (isPortariaError(error)) throw credentialsRefused(error.reason);
      throw error;
    }
    if (client.tlsClientAuth === null || !namesIdentity(certificate, client.tlsClientAuth)) {
      throw credentialsRefused('certificate-identity-mismatch');
    }
    return { method: 'tls_client_auth', proven: null };
  }
  if (certificate.verdict === 'revoked') throw credentialsRefused('certificate-revoked');
  const now = clock.now();
  if (Date.parse(certificate.x509.validTo) <= now) throw credentialsRefused('certificate-expired');
  if (Date.parse(certificate.x509.validFrom) > now) {
    throw credentialsRefused('certificate-not-yet-valid');
  }
  if (!(await isClientKey(client, certificate, keys))) {
    throw credentialsRefused('certificate-key-mismatch');
  }
  return { method: 'self_signed_tls_client_auth', proven: certificate };
}

async function isClientKey(
  client: ClientRecord,
  certificate: ClientCertificate,
  keys: ClientKeys,
): Promise<boolean> {
  const publicKey = certificate.x509.publicKey;
  let kid: string;
  try {
    kid = await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as JWK, 'sha256');
  } catch {
    // A key type JWK cannot express is no client's key.
    return false;
  }
  try {
    const key = await keys.keyFor(client, kid, client.assertionAlg);
    return key?.key.equals(publicKey) === true;
  } catch (error) {
    if (error instanceof ClientKeysUnavailable) throw credentialsRefused('client-keys-unavailable');
    throw error;
  }
}
