/**
 * A strict reader of DER (ITU-T X.690 §10) for the few fields the gateway reads itself:
 * a certificate's serial, names and validity, and a CRL's entries. Definite lengths in
 * their shortest form only, single-byte tags, nothing past a value's end: a BER encoding
 * or trailing bytes are refused, not guessed at. It does not decode what it does not
 * need (extensions are skipped by length); Node's `X509Certificate` parses the rest.
 */

/** One tag-length-value: the tag byte, where its value starts, and where it ends. */
export interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly valueStart: number;
  readonly end: number;
}

export const TAG = {
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
  boolean: 0x01,
} as const;

export class DerError extends Error {
  override readonly name = 'DerError';
}

/** The TLV at `offset`, inside `limit` (default: the buffer's end). */
export function readTlv(der: Uint8Array, offset: number, limit = der.length): Tlv {
  if (offset + 2 > limit) throw new DerError('truncated');
  const tag = der[offset] as number;
  // High tag numbers (0x1f) do not occur in the structures read here.
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tag');
  const first = der[offset + 1] as number;
  let length = first;
  let valueStart = offset + 2;
  if (first & 0x80) {
    const count = first & 0x7f;
    // 0x80 is BER's indefinite length; more than 4 bytes is larger than anything here.
    if (count === 0 || count > 4) throw new DerError('bad length');
    if (valueStart + count > limit) throw new DerError('truncated');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (der[valueStart + i] as number);
    // DER: the shortest form (X.690 §10.1).
    if (length < 0x80 || (der[valueStart] as number) === 0) throw new DerError('long form');
    valueStart += count;
  }
  const end = valueStart + length;
  if (end > limit) throw new DerError('truncated');
  return { tag, start: offset, valueStart, end };
}

/** The TLV at `offset`, which must have tag `tag`. */
export function expectTlv(der: Uint8Array, offset: number, tag: number, limit?: number): Tlv {
  const tlv = readTlv(der, offset, limit);
  if (tlv.tag !== tag) throw new DerError(`expected tag 0x${tag.toString(16)}`);
  return tlv;
}

/** The TLVs directly inside a constructed `parent`, in order. */
export function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  let at = parent.valueStart;
  while (at < parent.end) {
    const child = readTlv(der, at, parent.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

/** One whole DER value spanning `der` exactly (no trailing bytes). */
export function wholeTlv(der: Uint8Array, tag: number): Tlv {
  const tlv = expectTlv(der, 0, tag);
  if (tlv.end !== der.length) throw new DerError('trailing bytes');
  return tlv;
}

/** The bytes of `tlv`, tag and length included. */
export function encoded(der: Uint8Array, tlv: Tlv): Buffer {
  return Buffer.from(der.buffer, der.byteOffset + tlv.start, tlv.end - tlv.start);
}

/** The value bytes of `tlv`. */
export function contentOf(der: Uint8Array, tlv: Tlv): Buffer {
  return Buffer.from(der.buffer, der.byteOffset + tlv.valueStart, tlv.end - tlv.valueStart);
}

/** An OBJECT IDENTIFIER's dotted form (X.690 §8.19). */
export function oidOf(der: Uint8Array, tlv: Tlv): string {
  if (tlv.tag !== TAG.oid || tlv.end === tlv.valueStart) throw new DerError('not an OID');
  const arcs: number[] = [];
  let value = 0;
  for (let i = tlv.valueStart; i < tlv.end; i++) {
    const byte = der[i] as number;
    if (value === 0 && byte === 0x80) throw new DerError('OID padding');
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 128) throw new DerError('OID arc too large');
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    }
  }
  if ((der[tlv.end - 1] as number) & 0x80) throw new DerError('OID truncated');
  const first = arcs[0] as number;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...arcs.slice(1)].join('.');
}

/**
 * A positive INTEGER (a serial number) as upper-case hex without leading zeros, the form
 * Node's `X509Certificate.serialNumber` compares with.
 */
export function serialOf(der: Uint8Array, tlv: Tlv): string {
  if (tlv.tag !== TAG.integer || tlv.end === tlv.valueStart) throw new DerError('not an INTEGER');
  const hex = contentOf(der, tlv).toString('hex').toUpperCase().replace(/^0+/, '');
  return hex === '' ? '0' : hex;
}

const TIME = {
  [TAG.utcTime]: /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/,
  [TAG.generalizedTime]: /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/,
} as const;

/**
 * A UTCTime or GeneralizedTime in RFC 5280 §4.1.2.5's profile (seconds, `Z`, no
 * fraction), as milliseconds since the epoch. A UTCTime year below 50 is 20YY.
 */
export function timeOf(der: Uint8Array, tlv: Tlv): number {
  const pattern = tlv.tag === TAG.utcTime || tlv.tag === TAG.generalizedTime ? TIME[tlv.tag] : null;
  const match = pattern?.exec(contentOf(der, tlv).toString('latin1'));
  if (!match) throw new DerError('not a time');
  const [, y = '', mo = '', d = '', h = '', mi = '', s = ''] = match;
  let year = Number(y);
  if (tlv.tag === TAG.utcTime) year += year < 50 ? 2000 : 1900;
  const ms = Date.UTC(year, Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  const back = new Date(ms);
  // Date.UTC rolls over (month 13, second 61): such a time is not one.
  if (back.getUTCMonth() !== Number(mo) - 1 || back.getUTCDate() !== Number(d)) {
    throw new DerError('not a time');
  }
  if (back.getUTCHours() !== Number(h) || back.getUTCSeconds() !== Number(s)) {
    throw new DerError('not a time');
  }
  return ms;
}
