/**
 * Whether a client certificate names the identity a `tls_client_auth` client registered
 * (RFC 8705 §2.1.2), read from the certificate's DER rather than from Node's printed
 * subject and SAN strings, whose escaping and separators are not a stable grammar:
 *
 *   subjectDn  the subject's RDNSequence against the registered DN, RDN by RDN in order;
 *              within an RDN the attributes as a set (an RDN is a SET, RFC 5280 §4.1.2.4);
 *              each attribute by its OID and its value's text exactly (no case folding
 *              or space folding: RFC 4517's matching rules are not applied, so the
 *              registration must be written as the certificate spells it)
 *   sanDns     a dNSName, ASCII case-insensitively (RFC 4343)
 *   sanUri     a uniformResourceIdentifier, exactly
 *   sanIp      an iPAddress, by its bytes
 *   sanEmail   an rfc822Name, exactly
 *
 * The names of a certificate are read once and kept with it (a WeakMap over the
 * connection's certificate): a connection's requests do not parse it again.
 */
import type { NameAttribute, RelativeName } from '../clients/distinguishedName.js';
import type { TlsClientIdentity } from '../clients/tlsClientIdentity.js';
import type { ClientCertificate } from '../domain/clientCertificate.js';

interface CertificateNames {
  /** null: a subject this reader cannot decode (never matches). */
  readonly subject: readonly RelativeName[] | null;
  readonly dns: readonly string[];
  readonly uri: readonly string[];
  readonly ip: readonly Buffer[];
  readonly email: readonly string[];
}

const known = new WeakMap<ClientCertificate, CertificateNames>();

/** True when `certificate` names `identity`. */
export function namesIdentity(
  certificate: ClientCertificate,
  identity: TlsClientIdentity,
): boolean {
  let names = known.get(certificate);
  if (names === undefined) {
    names = certificateNames(certificate.der);
    known.set(certificate, names);
  }
  switch (identity.kind) {
    case 'subjectDn':
      return names.subject !== null && sameDn(names.subject, identity.dn);
    case 'sanDns':
      return names.dns.some((name) => name.toLowerCase() === identity.value);
    case 'sanUri':
      return names.uri.includes(identity.value);
    case 'sanEmail':
      return names.email.includes(identity.value);
    case 'sanIp':
      return names.ip.some((bytes) => bytes.equals(identity.bytes));
  }
}

function sameDn(a: readonly RelativeName[], b: readonly RelativeName[]): boolean {
  return a.length === b.length && a.every((rdn, i) => sameRdn(rdn, b[i] as RelativeName));
}

function sameRdn(a: RelativeName, b: RelativeName): boolean {
  const same = (x: NameAttribute) => (y: NameAttribute) => x.type === y.type && x.value === y.value;
  return (
    a.length === b.length && a.every((x) => b.some(same(x))) && b.every((y) => a.some(same(y)))
  );
}

// A minimal DER reader: the certificate was parsed by OpenSSL already (it is well-formed),
// so a structure this reader does not expect yields no names rather than an error.

interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly end: number;
}

function tlv(der: Buffer, offset: number, limit: number): Tlv | null {
  if (offset + 2 > limit) return null;
  const tag = der[offset] as number;
  let length = der[offset + 1] as number;
  let start = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || start + count > limit) return null;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (der[start + i] as number);
    start += count;
  }
  const end = start + length;
  return end > limit ? null : { tag, start, end };
}

function children(der: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end; ) {
    const child = tlv(der, at, parent.end);
    if (child === null) return out;
    out.push(child);
    at = child.end;
  }
  return out;
}

const NONE: CertificateNames = { subject: null, dns: [], uri: [], ip: [], email: [] };
const SAN_OID = '2.5.29.17';

function certificateNames(der: Buffer): CertificateNames {
  const certificate = tlv(der, 0, der.length);
  if (certificate === null) return NONE;
  const tbs = children(der, certificate)[0];
  if (tbs === undefined) return NONE;
  const fields = children(der, tbs);
  // version [0] is optional; then serial, signature, issuer, validity, subject.
  const first = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subjectField = fields[first + 4];
  const subject = subjectField === undefined ? null : nameOf(der, subjectField);
  const names = {
    subject,
    dns: [] as string[],
    uri: [] as string[],
    ip: [] as Buffer[],
    email: [] as string[],
  };
  const extensions = fields.find((f) => f.tag === 0xa3);
  const list = extensions === undefined ? undefined : children(der, extensions)[0];
  for (const extension of list === undefined ? [] : children(der, list)) {
    const parts = children(der, extension);
    const id = parts[0];
    const value = parts[parts.length - 1];
    if (id?.tag !== 0x06 || value?.tag !== 0x04 || oid(der, id) !== SAN_OID) continue;
    const generalNames = tlv(der, value.start, value.end);
    if (generalNames === null) continue;
    for (const name of children(der, generalNames)) {
      const bytes = der.subarray(name.start, name.end);
      // GeneralName's context tags (RFC 5280 §4.2.1.6), primitive: [1] rfc822Name,
      // [2] dNSName, [6] uniformResourceIdentifier (IA5String), [7] iPAddress.
      if (name.tag === 0x81) names.email.push(bytes.toString('latin1'));
      else if (name.tag === 0x82) names.dns.push(bytes.toString('latin1'));
      else if (name.tag === 0x86) names.uri.push(bytes.toString('latin1'));
      else if (name.tag === 0x87) names.ip.push(Buffer.from(bytes));
    }
  }
  return names;
}

/** A Name (SEQUENCE OF SET OF AttributeTypeAndValue), or null when a value is not text. */
function nameOf(der: Buffer, name: Tlv): RelativeName[] | null {
  const rdns: RelativeName[] = [];
  for (const set of children(der, name)) {
    const rdn: NameAttribute[] = [];
    for (const attribute of children(der, set)) {
      const [type, value] = children(der, attribute);
      if (type?.tag !== 0x06 || value === undefined) return null;
      const text = stringValue(der, value);
      if (text === null) return null;
      rdn.push({ type: oid(der, type), value: text });
    }
    rdns.push(rdn);
  }
  return rdns;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The text of a directory string (RFC 5280 §4.1.2.4), or null for another type. */
function stringValue(der: Buffer, value: Tlv): string | null {
  const bytes = der.subarray(value.start, value.end);
  try {
    switch (value.tag) {
      case 0x0c: // UTF8String
        return utf8.decode(bytes);
      case 0x12: // NumericString
      case 0x13: // PrintableString
      case 0x14: // TeletexString (as Latin-1, as OpenSSL prints it)
      case 0x16: // IA5String
      case 0x1a: // VisibleString
        return bytes.toString('latin1');
      case 0x1e: // BMPString: UTF-16BE
        return Buffer.from(bytes).swap16().toString('utf16le');
      case 0x1c: {
        // UniversalString: UTF-32BE
        let text = '';
        for (let i = 0; i + 4 <= bytes.length; i += 4)
          text += String.fromCodePoint(bytes.readUInt32BE(i));
        return text;
      }
      default:
        return null;
    }
  } catch {
    return null;
  }
}

/** An OBJECT IDENTIFIER's dotted form (X.690 §8.19). */
function oid(der: Buffer, id: Tlv): string {
  const arcs: number[] = [];
  let arc = 0;
  for (let i = id.start; i < id.end; i++) {
    const byte = der[i] as number;
    arc = arc * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      arcs.push(arc);
      arc = 0;
    }
  }
  const head = arcs.shift() ?? 0;
  const firstArc = head < 40 ? 0 : head < 80 ? 1 : 2;
  return [firstArc, head - firstArc * 40, ...arcs].join('.');
}
