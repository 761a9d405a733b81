/**
 * A client certificate as the edge received it: over the public listener's TLS, or from
 * a trusted proxy's header. Built once per connection (TLS) or per header value, never
 * per request; the entry puts it into the `AccessRequest` and the steps and the token
 * endpoints read it.
 *
 * `thumbprint` is RFC 8705 §3.1's `x5t#S256`: the base64url SHA-256 of the DER
 * encoding. `verdict` says whether the chain was verified against the configured trust
 * anchors (OpenSSL's verification over TLS; the gateway's own for a header) and, if not,
 * why: a certificate is kept even when it is not verified, because
 * `self_signed_tls_client_auth` (RFC 8705 §2.2) accepts a certificate no CA issued, and
 * because each refusal (expired, untrusted, revoked) has its own answer where it matters.
 */
import { createHash, X509Certificate } from 'node:crypto';

/** Where the certificate came from. */
export type CertificateSource = 'tls' | 'header';

/** The chain verification's outcome: `verified`, or why not. */
export type CertificateVerdict =
  | 'verified'
  | 'untrusted'
  | 'expired'
  | 'not-yet-valid'
  | 'revoked'
  | 'self-signed';

export interface ClientCertificate {
  readonly source: CertificateSource;
  /** The DER encoding. */
  readonly der: Buffer;
  /** `x5t#S256` (RFC 8705 §3.1). */
  readonly thumbprint: string;
  /** Node's parse of it (subject, SANs, validity, public key). */
  readonly x509: X509Certificate;
  readonly verdict: CertificateVerdict;
}

/** `x5t#S256` of a DER certificate: base64url (no padding) of its SHA-256 (RFC 8705 §3.1). */
export function certificateThumbprint(der: Uint8Array): string {
  return createHash('sha256').update(der).digest('base64url');
}

/** The certificate of `der`; throws when it is not one X.509 certificate. */
export function clientCertificate(
  der: Buffer,
  source: CertificateSource,
  verdict: CertificateVerdict,
): ClientCertificate {
  const x509 = new X509Certificate(der);
  return Object.freeze({ source, der, thumbprint: certificateThumbprint(der), x509, verdict });
}
