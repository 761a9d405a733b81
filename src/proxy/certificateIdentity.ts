/**
 * The client certificate's identity as identity headers (`identityHeaders` names
 * `certificate.subject`, `certificate.san`, `certificate.thumbprint`): what the gateway
 * saw and checked, in the reserved namespace, so an upstream reads who connected
 * without parsing a certificate, and never a value the caller wrote.
 *
 *   certificate.subject     the subject DN as RFC 4514 writes it (most specific RDN
 *                           first, `,` between, specials escaped): `CN=acme,O=Acme,C=BR`
 *   certificate.san         the subject alternative names as OpenSSL lists them:
 *                           `DNS:acme.example, URI:https://acme.example/id`
 *   certificate.thumbprint  `x5t#S256` (RFC 8705 §3.1)
 *
 * Each value is percent-encoded like a claim (`identityHeaderValue.ts`); without a
 * certificate (or without SANs) the header is not set. The text is made once per
 * certificate: a connection's requests share it.
 */
import type { ClientCertificate } from '../domain/clientCertificate.js';
import { identityHeaderValue } from './identityHeaderValue.js';

export const CERTIFICATE_FIELDS = [
  'certificate.subject',
  'certificate.san',
  'certificate.thumbprint',
] as const;

export function isCertificateField(name: string): boolean {
  return (CERTIFICATE_FIELDS as readonly string[]).includes(name);
}

interface Fields {
  readonly subject: string | undefined;
  readonly san: string | undefined;
  readonly thumbprint: string | undefined;
}

const byCertificate = new WeakMap<ClientCertificate, Fields>();

/** The header value of `field` for `certificate`, or undefined: the header is not set. */
export function certificateField(
  field: string,
  certificate: ClientCertificate | null,
): string | undefined {
  if (certificate === null) return undefined;
  let fields = byCertificate.get(certificate);
  if (fields === undefined) {
    const san = certificate.x509.subjectAltName;
    fields = {
      subject: identityHeaderValue(rfc4514(certificate.x509.subject)),
      san: san === undefined || san === '' ? undefined : identityHeaderValue(san),
      thumbprint: certificate.thumbprint,
    };
    byCertificate.set(certificate, fields);
  }
  if (field === 'certificate.subject') return fields.subject;
  if (field === 'certificate.san') return fields.san;
  return fields.thumbprint;
}

/**
 * Node's subject (one `TYPE=value` line per attribute, in certificate order) as an
 * RFC 4514 string: the last RDN first, the specials of §2.4 escaped.
 */
export function rfc4514(subject: string): string {
  return subject
    .split('\n')
    .filter((line) => line !== '')
    .reverse()
    .map((line) => {
      const at = line.indexOf('=');
      return `${line.slice(0, at)}=${escapeValue(line.slice(at + 1))}`;
    })
    .join(',');
}

function escapeValue(value: string): string {
  let out = value.replace(/["+,;<>\\]/g, (c) => `\\${c}`);
  if (out.startsWith('#') || out.startsWith(' ')) out = `\\${out}`;
  if (out.endsWith(' ') && !out.endsWith('\\ ')) out = `${out.slice(0, -1)}\\ `;
  return out;
}
