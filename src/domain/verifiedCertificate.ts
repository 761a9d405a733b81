/**
 * A verified client certificate, or the refusal that says why there is none: the one
 * rule the steps that need a CA-issued certificate share (the `require` mode of the
 * public listener, RFC 8705 §2.1 `tls_client_auth` at the token endpoints, the
 * certificate binding of RFC 8705 §3). A step that accepts a certificate no CA issued
 * (`self_signed_tls_client_auth`, RFC 8705 §2.2) reads `certificate` itself instead.
 *
 * Both refusals are 401 without a challenge (no HTTP authentication scheme asks for a
 * TLS certificate) and carry RFC 6749's `invalid_client` for the OAuth endpoints'
 * shape; the verdict is the private reason, never told to the client beyond the detail.
 */
import { PortariaError } from '../errors.js';
import type { CertificateVerdict, ClientCertificate } from './clientCertificate.js';

type Unverified = Exclude<CertificateVerdict, 'verified'>;

const INVALID: Readonly<Record<Unverified, { reason: PortariaError['reason']; detail: string }>> = {
  expired: { reason: 'certificate-expired', detail: 'The client certificate has expired.' },
  'not-yet-valid': {
    reason: 'certificate-not-yet-valid',
    detail: 'The client certificate is not valid yet.',
  },
  untrusted: {
    reason: 'certificate-untrusted',
    detail: 'The client certificate was not issued by a trusted authority.',
  },
  revoked: { reason: 'certificate-revoked', detail: 'The client certificate has been revoked.' },
  'self-signed': {
    reason: 'certificate-self-signed',
    detail: 'The client certificate is self-signed; a trusted authority must issue it.',
  },
};

/** `certificate` when a trusted CA's chain verified it; else throws the refusal. */
export function verifiedCertificate(certificate: ClientCertificate | null): ClientCertificate {
  if (certificate === null) {
    throw new PortariaError(
      'certificate-required',
      'A client certificate is required (mutual TLS).',
      { reason: 'certificate-missing', oauth: 'invalid_client' },
    );
  }
  if (certificate.verdict === 'verified') return certificate;
  const { reason, detail } = INVALID[certificate.verdict];
  throw new PortariaError('certificate-invalid', detail, { reason, oauth: 'invalid_client' });
}
