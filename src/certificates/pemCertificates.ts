/**
 * PEM certificates (RFC 7468 §5) to DER. Two readings: `pemCertificateBlocks` for a
 * header value, which must be certificate blocks and nothing else (whitespace between
 * lines and blocks aside: RFC 7468 §3's lax form), and `certificatesOfFile` for a CA
 * file, which may carry the explanatory text OpenSSL writes between blocks (RFC 7468
 * §5.2) or be one DER certificate.
 */

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const WHITESPACE = /[ \t\r\n]/g;

export class PemError extends Error {
  override readonly name = 'PemError';
}

/** The base64 between a block's lines, strictly: the alphabet, padding at the end only. */
function base64Bytes(text: string, label = 'certificate'): Buffer {
  const compact = text.replace(WHITESPACE, '');
  if (compact.length === 0 || compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw new PemError(`the base64 inside a ${label} block is invalid`);
  }
  return Buffer.from(compact, 'base64');
}

function isBlank(text: string): boolean {
  return text.replace(WHITESPACE, '').length === 0;
}

/**
 * The DER of each `CERTIFICATE` block of `text`; throws a PemError when anything else is
 * there (another label, text before, between or after the blocks, a block left open).
 */
export function pemCertificateBlocks(text: string): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < text.length) {
    const begin = text.indexOf(BEGIN, at);
    if (begin === -1) {
      if (!isBlank(text.slice(at))) throw new PemError('there is text after the certificate');
      break;
    }
    if (!isBlank(text.slice(at, begin))) {
      throw new PemError('there is text before the certificate');
    }
    const end = text.indexOf(END, begin + BEGIN.length);
    if (end === -1) throw new PemError('a certificate block is not closed');
    const body = text.slice(begin + BEGIN.length, end);
    if (body.includes('-----')) throw new PemError('a certificate block is not closed');
    out.push(base64Bytes(body));
    at = end + END.length;
  }
  if (out.length === 0) throw new PemError('there is no certificate in it');
  return out;
}

/**
 * The certificates of a CA file: every `CERTIFICATE` block (text outside the blocks is
 * ignored, as OpenSSL does), or the whole file as one DER certificate when it holds no
 * PEM at all. Throws a PemError when it holds none.
 */
export function certificatesOfFile(content: Buffer): Buffer[] {
  const text = content.toString('latin1');
  if (!text.includes('-----BEGIN')) {
    if (content.length === 0) throw new PemError('it is empty');
    return [content];
  }
  const out: Buffer[] = [];
  let at = text.indexOf(BEGIN);
  while (at !== -1) {
    const end = text.indexOf(END, at + BEGIN.length);
    if (end === -1) throw new PemError('a certificate block is not closed');
    out.push(base64Bytes(text.slice(at + BEGIN.length, end)));
    at = text.indexOf(BEGIN, end + END.length);
  }
  if (out.length === 0) throw new PemError('there is no CERTIFICATE block in it');
  return out;
}

const CRL_BEGIN = '-----BEGIN X509 CRL-----';
const CRL_END = '-----END X509 CRL-----';

/** The CRLs of a file: every `X509 CRL` block (RFC 7468 §6), or the whole file as one DER CRL. */
export function revocationListsOfFile(content: Buffer): Buffer[] {
  const text = content.toString('latin1');
  if (!text.includes('-----BEGIN')) {
    if (content.length === 0) throw new PemError('it is empty');
    return [content];
  }
  const out: Buffer[] = [];
  let at = text.indexOf(CRL_BEGIN);
  while (at !== -1) {
    const end = text.indexOf(CRL_END, at + CRL_BEGIN.length);
    if (end === -1) throw new PemError('a CRL block is not closed');
    out.push(base64Bytes(text.slice(at + CRL_BEGIN.length, end), 'CRL'));
    at = text.indexOf(CRL_BEGIN, end + CRL_END.length);
  }
  if (out.length === 0) throw new PemError('there is no X509 CRL block in it');
  return out;
}
