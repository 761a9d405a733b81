/**
 * A JWS ECDSA signature, r‖s as two fixed-length big-endian integers (RFC 7518 §3.4),
 * written as the DER `ECDSA-Sig-Value` OpenSSL reads natively (RFC 3279 §2.2.3: a
 * SEQUENCE of two INTEGERs, each minimal, ITU-T X.690 §8.3.2). It is what Node does
 * for `dsaEncoding: 'ieee-p1363'`; done here, `crypto.verify` takes the bare KeyObject,
 * where an options object costs Node 24 two thrown and caught TypeErrors per call
 * (bench/RESULTS.md). The conversion is one-to-one: each r‖s has one DER form, and
 * OpenSSL refuses any DER but the minimal one, so no second spelling verifies. The
 * reverse turns the DER `crypto.sign` writes back into r‖s.
 */

/**
 * The DER form of `signature` (r‖s, each `integerLength` octets), or null when its
 * length is not `2 × integerLength` (no valid signature for the curve).
 */
export function ecdsaDerSignature(signature: Buffer, integerLength: number): Buffer | null {
  if (signature.length !== 2 * integerLength) return null;
  const rStart = firstSignificant(signature, 0, integerLength);
  const sStart = firstSignificant(signature, integerLength, signature.length);
  const rPad = (signature[rStart] as number) >= 0x80 ? 1 : 0;
  const sPad = (signature[sStart] as number) >= 0x80 ? 1 : 0;
  const rLength = integerLength - rStart + rPad;
  const sLength = signature.length - sStart + sPad;
  const body = 4 + rLength + sLength;
  // A SEQUENCE body over 127 octets (P-521) takes the long length form (X.690 §8.1.3.5).
  const head = body < 0x80 ? 2 : 3;
  const der = Buffer.allocUnsafe(head + body);
  der[0] = 0x30;
  if (head === 2) {
    der[1] = body;
  } else {
    der[1] = 0x81;
    der[2] = body;
  }
  let at = writeInteger(der, head, signature, rStart, integerLength, rPad);
  at = writeInteger(der, at, signature, sStart, signature.length, sPad);
  return der;
}

/** The first octet of `[start, end)` that is not a leading zero (the last one at least). */
function firstSignificant(octets: Buffer, start: number, end: number): number {
  let at = start;
  while (at < end - 1 && octets[at] === 0) at++;
  return at;
}

/** An INTEGER of `source[start, end)`, with a zero octet first when the top bit is set. */
function writeInteger(
  der: Buffer,
  at: number,
  source: Buffer,
  start: number,
  end: number,
  pad: number,
): number {
  der[at] = 0x02;
  der[at + 1] = end - start + pad;
  if (pad === 1) der[at + 2] = 0;
  source.copy(der, at + 2 + pad, start, end);
  return at + 2 + pad + end - start;
}

/**
 * r‖s (each `integerLength` octets, left-padded with zeros) of a DER `ECDSA-Sig-Value`
 * as OpenSSL signs it; throws on anything else (our own signer's output, never input).
 */
export function ecdsaJwsSignature(der: Buffer, integerLength: number): Buffer {
  let at = der[1] === 0x81 ? 3 : 2;
  if (der[0] !== 0x30 || (at === 2 ? der[1] : der[2]) !== der.length - at) {
    throw new Error('not a DER ECDSA signature');
  }
  const out = Buffer.alloc(2 * integerLength);
  for (let half = 0; half < 2; half++) {
    const length = der[at + 1] as number;
    if (der[at] !== 0x02 || length < 1 || at + 2 + length > der.length) {
      throw new Error('not a DER ECDSA signature');
    }
    const end = at + 2 + length;
    let start = at + 2;
    while (end - start > integerLength && der[start] === 0) start++;
    if (end - start > integerLength) throw new Error('ECDSA integer longer than the curve');
    der.copy(out, (half + 1) * integerLength - (end - start), start, end);
    at = end;
  }
  if (at !== der.length) throw new Error('not a DER ECDSA signature');
  return out;
}
