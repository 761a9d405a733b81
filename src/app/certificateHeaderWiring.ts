/**
 * With `clientCertificate.source: header`, the reader of the proxy's certificate header
 * over the CA and CRL files read at start (`certificates/`); with any other source,
 * none (the header is still removed before forwarding: `forwardingWiring.ts`).
 */
import { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import {
  type CertificateTrust,
  loadCertificateTrust,
  NO_CERTIFICATE_TRUST,
} from '../certificates/certificateTrust.js';
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';

/** The CA and CRL files the header's certificates are checked against (none unless read). */
export function headerCertificateTrust(config: Config): Promise<CertificateTrust> {
  const { source, caFiles, crlFiles } = config.clientCertificate;
  if (source !== 'header') return Promise.resolve(NO_CERTIFICATE_TRUST);
  return loadCertificateTrust(caFiles, crlFiles);
}

export function certificateHeaderReader(
  config: Config,
  trust: CertificateTrust,
  clock: Clock,
): CertificateHeaderReader | undefined {
  const { source, header } = config.clientCertificate;
  if (source !== 'header') return undefined;
  return new CertificateHeaderReader({ format: header.format, name: header.name, trust, clock });
}
