/**
 * Envoy's `X-Forwarded-Client-Cert`: elements separated by `,`, one per proxy that added
 * one, each `key=value` pairs separated by `;`; keys case-insensitive; a value holding
 * `,`, `;` or `=` in double quotes, `"` inside escaped as `\"`. Envoy writes `By`, `Hash`
 * (the hex SHA-256 of the certificate's DER), `Cert` (the URL-encoded PEM), `Chain` (the
 * URL-encoded PEM chain, leaf included), `Subject`, `URI` and `DNS`.
 *
 * The last element is read: a proxy appends its element at the end, so the last one was
 * added by the proxy nearest the gateway, the trusted peer. Earlier elements describe
 * hops further out and are never read, but the whole field must parse: a field the
 * trusted proxies wrote is well-formed, and a boundary found by guessing in a broken one
 * could move under a client's bytes.
 *
 * `Hash` alone is not a certificate: an element without `Cert` is refused (400,
 * `certificate-header-no-cert`) rather than read as "no certificate", since it means the
 * proxy is configured to forward only the hash and every certificate would silently go
 * missing. A `Hash` beside `Cert` must be the certificate's (`certificate-hash-mismatch`).
 */
import { createHash } from 'node:crypto';
import { HeaderFormatError, type PresentedCertificates } from './headerFormat.js';
import { onePemCertificate, pemBlocks, percentDecoded } from './nginxHeader.js';

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

/** One element's pairs, keys lower-cased, in order. */
type Element = [key: string, value: string][];

function malformed(what: string): HeaderFormatError {
  return new HeaderFormatError(`is not an X-Forwarded-Client-Cert value: ${what}`);
}

function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t';
}

/** The elements of an XFCC value, each a list of its pairs. */
export function xfccElements(value: string): Element[] {
  const elements: Element[] = [];
  let pairs: Element = [];
  let i = 0;
  const n = value.length;
  const skipSpace = () => {
    while (isSpace(value[i])) i++;
  };
  skipSpace();
  while (true) {
    const eq = value.indexOf('=', i);
    const keyEnd = eq === -1 ? n : eq;
    const key = value.slice(i, keyEnd).trim().toLowerCase();
    if (eq === -1 || key === '' || /[,;"\s]/.test(key)) throw malformed('a pair has no key=');
    i = eq + 1;
    let text = '';
    if (value[i] === '"') {
      i++;
      while (true) {
        if (i >= n) throw malformed('a quoted value is not closed');
        const c = value[i] as string;
        if (c === '"') break;
        if (c === '\\') {
          i++;
          if (i >= n) throw malformed('a quoted value is not closed');
        }
        text += value[i];
        i++;
      }
      i++;
      skipSpace();
    } else {
      const start = i;
      while (i < n && value[i] !== ';' && value[i] !== ',') {
        if (value[i] === '"') throw malformed('a quote inside an unquoted value');
        i++;
      }
      text = value.slice(start, i).trim();
    }
    pairs.push([key, text]);
    if (i >= n) break;
    const separator = value[i];
    if (separator !== ';' && separator !== ',') throw malformed('text after a quoted value');
    i++;
    skipSpace();
    if (separator === ',') {
      elements.push(pairs);
      pairs = [];
    }
    if (i >= n) throw malformed('it ends with a separator');
  }
  elements.push(pairs);
  return elements;
}

/** The value of `key` in `element`; more than once is refused. */
function single(element: Element, key: string): string | undefined {
  let found: string | undefined;
  for (const [k, v] of element) {
    if (k !== key) continue;
    if (found !== undefined) throw new HeaderFormatError(`names ${key} twice in one element`);
    found = v;
  }
  return found;
}

/** The certificate of the last XFCC element, checked against its `Hash`. */
export function parseXfcc(value: string): PresentedCertificates {
  const element = xfccElements(value).at(-1) as Element;
  const cert = single(element, 'cert');
  const hash = single(element, 'hash');
  const chain = single(element, 'chain');
  if (cert === undefined) {
    throw new HeaderFormatError(
      'has no Cert in its last element (configure the proxy to forward the certificate)',
      'certificate-header-no-cert',
    );
  }
  const leaf = onePemCertificate(percentDecoded(cert));
  if (hash !== undefined) {
    if (!HEX_SHA256.test(hash)) throw new HeaderFormatError('has a Hash that is not a SHA-256');
    if (createHash('sha256').update(leaf).digest('hex') !== hash.toLowerCase()) {
      throw new HeaderFormatError(
        'has a Hash that is not the SHA-256 of its Cert',
        'certificate-hash-mismatch',
      );
    }
  }
  // Envoy's Chain starts with the leaf (Cert): the intermediates are the others.
  const intermediates =
    chain === undefined ? [] : pemBlocks(percentDecoded(chain)).filter((c) => !c.equals(leaf));
  return { leaf, chain: intermediates };
}
