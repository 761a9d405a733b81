/**
 * RFC 9440's fields: `Client-Cert`, one Structured Field Item whose value is a Byte
 * Sequence of the certificate's DER (RFC 9440 §2.1, §2.2; RFC 8941 §3.3.5), and
 * `Client-Cert-Chain`, a List of such Byte Sequences, the intermediates in TLS order
 * without the end-entity certificate (§2.3). Parameters, which RFC 9440 defines none of,
 * are ignored (RFC 8941 §3.1.2). The chain without the certificate is refused: §2.3 says
 * it must not appear alone, and a proxy that lets it through unsanitised may do the same
 * with `Client-Cert`.
 *
 * Parsing is structured-headers' (RFC 8941 / RFC 9651); this module checks the shapes
 * RFC 9440 asks for.
 */
import { parseItem, parseList } from 'structured-headers';
import { HeaderFormatError, type PresentedCertificates } from './headerFormat.js';

function bytesOf(value: unknown): Buffer | null {
  return value instanceof ArrayBuffer ? Buffer.from(value) : null;
}

/** The certificates of `Client-Cert` (`certificate`) and `Client-Cert-Chain` (`chain`). */
export function parseRfc9440(
  certificate: string | undefined,
  chain: string | undefined,
): PresentedCertificates {
  if (certificate === undefined) {
    throw new HeaderFormatError(
      'came without Client-Cert (RFC 9440 §2.3)',
      'certificate-header-malformed',
      'chain',
    );
  }
  let leaf: Buffer | null;
  try {
    leaf = bytesOf(parseItem(certificate)[0]);
  } catch {
    leaf = null;
  }
  if (leaf === null) {
    throw new HeaderFormatError('is not one Structured Field Byte Sequence (RFC 9440 §2.2)');
  }
  if (chain === undefined) return { leaf, chain: [] };
  const intermediates: Buffer[] = [];
  for (const [value] of chainMembers(chain)) {
    const bytes = Array.isArray(value) ? null : bytesOf(value);
    if (bytes === null) throw notAChain();
    intermediates.push(bytes);
  }
  return { leaf, chain: intermediates };
}

function chainMembers(chain: string): ReturnType<typeof parseList> {
  try {
    return parseList(chain);
  } catch {
    throw notAChain();
  }
}

function notAChain(): HeaderFormatError {
  return new HeaderFormatError(
    'is not a Structured Field List of Byte Sequences (RFC 9440 §2.3)',
    'certificate-header-malformed',
    'chain',
  );
}
