/**
 * nginx's `$ssl_client_escaped_cert`: the client certificate's PEM, URL-encoded
 * (percent-encoding, RFC 3986 §2.1), in a header the operator names. ingress-nginx's
 * `ssl-client-cert` and AWS Application Load Balancer's `X-Amzn-Mtls-Clientcert` carry
 * the same form. One certificate block, nothing else: a second certificate, text around
 * it or bad percent-encoding is refused.
 *
 * nginx's older `$ssl_client_cert` (the PEM with every line after the first started by a
 * tab, for obsolete line folding) never reaches the gateway: Node's parser refuses a
 * folded field with 400, as RFC 9112 §5.2 allows. A PEM that is not encoded at all is
 * refused by name, so the fix is plain.
 */
import { HeaderFormatError, type PresentedCertificates } from './headerFormat.js';
import { PemError, pemCertificateBlocks } from './pemCertificates.js';

/** The certificate of a URL-encoded PEM (`$ssl_client_escaped_cert`). */
export function parseEscapedPem(value: string): PresentedCertificates {
  if (value.startsWith('-----BEGIN ')) {
    throw new HeaderFormatError('is a PEM that is not URL-encoded (send $ssl_client_escaped_cert)');
  }
  return { leaf: onePemCertificate(percentDecoded(value)), chain: [] };
}

/** `value` percent-decoded (RFC 3986 §2.1), or a failure. */
export function percentDecoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new HeaderFormatError('is not valid percent-encoding');
  }
}

/** The one certificate block of `pem`, as DER; two blocks or anything else around it fail. */
export function onePemCertificate(pem: string): Buffer {
  const blocks = pemBlocks(pem);
  if (blocks.length !== 1) throw new HeaderFormatError('holds more than one certificate');
  return blocks[0] as Buffer;
}

/** Every certificate block of `pem`, as DER. */
export function pemBlocks(pem: string, field: 'certificate' | 'chain' = 'certificate'): Buffer[] {
  try {
    return pemCertificateBlocks(pem);
  } catch (error) {
    if (!(error instanceof PemError)) throw error;
    throw new HeaderFormatError(
      `is not a PEM certificate: ${error.message}`,
      'certificate-header-malformed',
      field,
    );
  }
}
