/**
 * A distinguished name as a client registers it for `tls_client_auth`
 * (`tls_client_auth_subject_dn`, RFC 8705 §2.1.2): its RFC 4514 string, parsed once at
 * load into the ASN.1 order of the certificate's `RDNSequence` (the string lists the
 * last RDN first, RFC 4514 §2.1), each attribute type as its dotted OID.
 *
 * What the parse accepts: the types RFC 4514 §3 names (CN, L, ST, O, OU, C, STREET, DC,
 * UID) and a few more common in certificates (SERIALNUMBER, emailAddress, …), matched
 * case-insensitively, or a dotted OID; string values with RFC 4514 §2.4 escapes
 * (`\,`, `\2C`, hex pairs as UTF-8). Unescaped spaces around `,`, `+` and `=` are
 * ignored (the strict grammar escapes a value's own leading and trailing spaces, so this
 * is unambiguous). Refused: `#hex` values (a BER encoding, not text), an empty DN.
 * Values are kept exactly: the comparison (`oauth/certificateNames.ts`) is exact.
 */

/** One attribute type and value: `type` a dotted OID. */
export interface NameAttribute {
  readonly type: string;
  readonly value: string;
}

/** One RDN: usually one attribute, several for a multi-valued RDN (`CN=a+UID=b`). */
export type RelativeName = readonly NameAttribute[];

/** The RDNs in ASN.1 order (most general first), as the certificate holds them. */
export type DistinguishedName = readonly RelativeName[];

/** Short names → OIDs (RFC 4514 §3, RFC 4519, PKCS #9 `emailAddress`). */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  cn: '2.5.4.3',
  sn: '2.5.4.4',
  serialnumber: '2.5.4.5',
  c: '2.5.4.6',
  l: '2.5.4.7',
  st: '2.5.4.8',
  street: '2.5.4.9',
  o: '2.5.4.10',
  ou: '2.5.4.11',
  title: '2.5.4.12',
  gn: '2.5.4.42',
  givenname: '2.5.4.42',
  dnqualifier: '2.5.4.46',
  organizationidentifier: '2.5.4.97',
  dc: '0.9.2342.19200300.100.1.25',
  uid: '0.9.2342.19200300.100.1.1',
  emailaddress: '1.2.840.113549.1.9.1',
};

const DESCR = /^[A-Za-z][A-Za-z0-9-]*$/;
const NUMERIC_OID = /^(?:0|[1-9][0-9]*)(?:\.(?:0|[1-9][0-9]*))+$/;
const SPECIAL = new Set([' ', '"', '#', '+', ',', ';', '<', '=', '>', '\\']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The DN of an RFC 4514 string, or why it is not one this parse accepts. */
export function parseDistinguishedName(
  text: string,
): { readonly dn: DistinguishedName } | { readonly problem: string } {
  const rdns: NameAttribute[][] = [];
  let current: NameAttribute[] = [];
  let i = 0;
  const skipSpaces = () => {
    while (text[i] === ' ') i++;
  };
  skipSpaces();
  if (i === text.length) return { problem: 'is empty' };
  for (;;) {
    skipSpaces();
    const equals = text.indexOf('=', i);
    if (equals === -1) return { problem: `expects type=value at character ${i + 1}` };
    const type = typeOid(text.slice(i, equals).trim());
    if (type === null) {
      return { problem: `"${text.slice(i, equals).trim()}" is not a known attribute type or OID` };
    }
    i = equals + 1;
    skipSpaces();
    if (text[i] === '#') return { problem: '#hex values are not supported: write the text' };
    const value = readValue(text, i);
    if ('problem' in value) return value;
    i = value.end;
    current.push(Object.freeze({ type, value: value.text }));
    if (i === text.length) break;
    const separator = text[i];
    i++;
    if (separator === ',') {
      rdns.push(current);
      current = [];
    } else if (separator !== '+') {
      return { problem: `unexpected "${separator}" at character ${i}` };
    }
  }
  rdns.push(current);
  // RFC 4514 §2.1: the string starts with the last element of the RDNSequence.
  return { dn: Object.freeze(rdns.reverse().map((rdn) => Object.freeze(rdn))) };
}

function typeOid(type: string): string | null {
  if (NUMERIC_OID.test(type)) return type;
  if (/^oid\./i.test(type) && NUMERIC_OID.test(type.slice(4))) return type.slice(4);
  if (!DESCR.test(type)) return null;
  return TYPE_NAMES[type.toLowerCase()] ?? null;
}

/** A value up to an unescaped `,` or `+` (or the end), unescaped; trailing unescaped spaces dropped. */
function readValue(
  text: string,
  start: number,
): { readonly text: string; readonly end: number } | { readonly problem: string } {
  const bytes: number[] = [];
  let kept = 0;
  let i = start;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ',' || c === '+') break;
    if (c === '\\') {
      const next = text[i + 1];
      if (next !== undefined && SPECIAL.has(next)) {
        bytes.push(next.charCodeAt(0));
        i += 2;
      } else if (/^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
        bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
        i += 3;
      } else {
        return { problem: `a bad escape at character ${i + 1}` };
      }
      kept = bytes.length;
      continue;
    }
    if (c === '"' || c === ';' || c === '<' || c === '>' || c === '\0') {
      return { problem: `"${c}" at character ${i + 1} must be escaped` };
    }
    const char = String.fromCodePoint(text.codePointAt(i) as number);
    bytes.push(...Buffer.from(char, 'utf8'));
    if (c !== ' ') kept = bytes.length;
    i += char.length;
  }
  if (kept === 0) return { problem: `an empty value at character ${start + 1}` };
  try {
    return { text: utf8.decode(Uint8Array.from(bytes.slice(0, kept))), end: i };
  } catch {
    return { problem: 'an escaped value that is not UTF-8' };
  }
}
