/**
 * `server.tls` and `clientCertificate`: what a schema cannot say. TLS needs its
 * certificate and key, and its other settings mean nothing without it; a handshake asks
 * for client certificates only when something reads them (`source: tls`), and reading
 * them over TLS needs a handshake that asks; asking needs the CAs to verify against.
 * The files themselves are read and checked at start (`tls/tlsMaterial.ts`).
 */
import { isMapping, type Loose, section, strings, text } from './looseValues.js';

/** `server.tls` settings that mean something only with TLS on, and their defaults. */
const TLS_ONLY: Readonly<Record<string, unknown>> = {
  certFile: null,
  keyFile: null,
  minVersion: 'TLSv1.2',
  policy: 'default',
  clientCertificates: 'off',
};

export function tlsProblems(config: Loose): string[] {
  const problems: string[] = [];
  const tls = section(section(config.server).tls);
  const certificates = section(config.clientCertificate);
  const on = tls.enabled === true;
  if (on) {
    for (const key of ['certFile', 'keyFile']) {
      if (text(tls[key]) === null) {
        problems.push(`server.tls.${key}: is required with server.tls.enabled (a PEM file)`);
      }
    }
  } else {
    for (const [key, fallback] of Object.entries(TLS_ONLY)) {
      if (tls[key] !== undefined && tls[key] !== fallback) {
        problems.push(`server.tls.${key}: TLS is off; set server.tls.enabled`);
      }
    }
  }
  const asks = on && (tls.clientCertificates === 'request' || tls.clientCertificates === 'require');
  const source = certificates.source;
  if (asks && source !== 'tls' && typeof source === 'string') {
    problems.push(
      `server.tls.clientCertificates: "${String(tls.clientCertificates)}" asks partners for certificates nothing reads; set clientCertificate.source: tls`,
    );
  }
  if (source === 'tls' && !on) {
    problems.push('clientCertificate.source: "tls" needs server.tls.enabled');
  } else if (source === 'tls' && !asks) {
    problems.push(
      'clientCertificate.source: "tls" needs server.tls.clientCertificates: request or require',
    );
  }
  const caFiles = strings(certificates.caFiles);
  const crlFiles = strings(certificates.crlFiles);
  if (asks && Array.isArray(certificates.caFiles) && caFiles.length === 0) {
    problems.push(
      'clientCertificate.caFiles: the handshake asks for client certificates: list the CA files they must chain to',
    );
  }
  if (source === 'none') {
    for (const [key, files] of [
      ['caFiles', caFiles],
      ['crlFiles', crlFiles],
    ] as const) {
      if (files.length > 0) {
        problems.push(`clientCertificate.${key}: applies only with clientCertificate.source`);
      }
    }
  } else if (crlFiles.length > 0 && caFiles.length === 0) {
    problems.push(
      'clientCertificate.crlFiles: needs clientCertificate.caFiles (the CAs that issued the CRLs)',
    );
  }
  return problems;
}

/**
 * The issuer's default follows the listener: `https://localhost:8080` with TLS on (the
 * discovery documents and `resource_metadata` name URLs from it). Runs on the raw input,
 * before the schema's own default fills a missing issuer in.
 */
export function defaultIssuerForTls(input: unknown): void {
  if (!isMapping(input) || input.issuer !== undefined) return;
  if (section(section(input.server).tls).enabled === true) input.issuer = 'https://localhost:8080';
}
