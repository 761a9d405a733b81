/**
 * The client certificate of a TLS connection, read once per connection and kept for its
 * requests (keep-alive, pipelined, an upgrade): a per-request lookup is one WeakMap get.
 *
 * Its verdict is OpenSSL's verification of the chain against `clientCertificate.caFiles`
 * (and CRLs), which the handshake ran but did not enforce (`rejectUnauthorized: false`).
 * A connection that presented no certificate has none, whatever `socket.authorized`
 * says: on a resumed session without one, Node reports it authorized.
 */
import type { TLSSocket } from 'node:tls';
import {
  type CertificateVerdict,
  type ClientCertificate,
  clientCertificate,
} from '../domain/clientCertificate.js';

/** OpenSSL's verification errors (X509_V_ERR_*, as Node names them) with a verdict of their own. */
const VERDICTS: Readonly<Record<string, CertificateVerdict>> = {
  CERT_HAS_EXPIRED: 'expired',
  CERT_NOT_YET_VALID: 'not-yet-valid',
  CERT_REVOKED: 'revoked',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed',
};

/** Every other verification error, an unknown CA or a missing CRL among them, is `untrusted`. */
export function verdictOf(authorized: boolean, error: unknown): CertificateVerdict {
  if (authorized) return 'verified';
  return VERDICTS[errorCode(error)] ?? 'untrusted';
}

/** Node gives `authorizationError` as the error's code (typed as an Error). */
function errorCode(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error instanceof Error) return (error as NodeJS.ErrnoException).code ?? error.message;
  return '';
}

/** Told once per connection whose certificate is not verified (OpenSSL's code: log only). */
export type UnverifiedCertificate = (verdict: CertificateVerdict, opensslCode: string) => void;

export class PeerCertificates {
  readonly #known = new WeakMap<TLSSocket, ClientCertificate | null>();
  readonly #onUnverified: UnverifiedCertificate;

  constructor(onUnverified: UnverifiedCertificate = () => {}) {
    this.#onUnverified = onUnverified;
  }

  /** The connection's certificate, or null when it presented none. */
  of(socket: TLSSocket): ClientCertificate | null {
    const known = this.#known.get(socket);
    if (known !== undefined) return known;
    const certificate = this.#read(socket);
    this.#known.set(socket, certificate);
    return certificate;
  }

  #read(socket: TLSSocket): ClientCertificate | null {
    const x509 = socket.getPeerX509Certificate?.();
    if (x509 === undefined) return null;
    const verdict = verdictOf(socket.authorized, socket.authorizationError);
    if (verdict !== 'verified') this.#onUnverified(verdict, errorCode(socket.authorizationError));
    return clientCertificate(Buffer.from(x509.raw), 'tls', verdict);
  }
}
