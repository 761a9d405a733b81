/**
 * The opening step that puts the connection's client certificate into the scope
 * (`clientCertificate.source: tls`), present in the lists only then: one WeakMap lookup
 * per request (`tls/peerCertificate.ts` reads a connection's certificate once).
 *
 * With `server.tls.clientCertificates: require` it also refuses, with the reason, any
 * request without a verified certificate but those for the documents the gateway serves
 * openly (JWKS, OpenAPI, discovery metadata): a resource server fetching keys, or a
 * partner reading the metadata before it has its certificate, needs no certificate. It
 * runs after the path step, so it sees the canonical path.
 */
import type { TLSSocket } from 'node:tls';
import { verifiedCertificate } from '../domain/verifiedCertificate.js';
import type { PeerCertificates } from '../tls/peerCertificate.js';
import type { OpeningStep } from './openingSteps.js';

/** True for the canonical paths of the documents served without a certificate. */
export type OpenDocumentPath = (path: string) => boolean;

export function clientCertificateStep(
  certificates: PeerCertificates,
  required: OpenDocumentPath | null,
): OpeningStep {
  if (required === null) {
    return (req, scope) => {
      scope.certificate = certificates.of(req.socket as TLSSocket);
    };
  }
  const isOpenDocument = required;
  return (req, scope) => {
    const certificate = certificates.of(req.socket as TLSSocket);
    scope.certificate = certificate;
    if (certificate?.verdict === 'verified') return;
    if (!isOpenDocument((scope.target as NonNullable<typeof scope.target>).path)) {
      verifiedCertificate(certificate);
    }
  };
}
