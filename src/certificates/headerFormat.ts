/**
 * What a certificate header's format yields, and how it fails. Each format
 * (`rfc9440Header.ts`, `xfccHeader.ts`, `nginxHeader.ts`) is a pure parser from the
 * field's text to DER: the certificate the client presented and the intermediates the
 * proxy passed, none of them parsed as X.509 yet. A failure says which field it is about
 * and what is wrong in words fit for a client (never the value itself); the header
 * reader turns it into the 400 naming the header.
 */
import type { FailureReason } from '../errors.js';

/** The certificate headers' formats (`clientCertificate.header.format`). */
export type CertificateHeaderFormat = 'rfc9440' | 'xfcc' | 'nginx';

export interface PresentedCertificates {
  /** The client's certificate (DER, not yet parsed). */
  readonly leaf: Buffer;
  /** Intermediate CA certificates the proxy passed along, leaf excluded (DER). */
  readonly chain: readonly Buffer[];
}

/** Which field a failure is about: the certificate's or, for RFC 9440, the chain's. */
export type FailedField = 'certificate' | 'chain';

export class HeaderFormatError extends Error {
  override readonly name = 'HeaderFormatError';
  readonly reason: FailureReason;
  readonly field: FailedField;

  /** `problem` completes "The <name> header …" (e.g. "is not a Byte Sequence"). */
  constructor(
    problem: string,
    reason: FailureReason = 'certificate-header-malformed',
    field: FailedField = 'certificate',
  ) {
    super(problem);
    this.reason = reason;
    this.field = field;
  }
}
