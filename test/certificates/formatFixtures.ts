/**
 * Stand-in DER and PEM for the format parsers' tests: the parsers only move bytes between
 * encodings (the X.509 parse comes after them), so fixed bytes keep their tables exact.
 */
import { createHash } from 'node:crypto';

/** Bytes standing for a leaf certificate's DER, and for two intermediates'. */
export const LEAF = Buffer.from('3082010a0282010100c0ffee', 'hex');
export const INTERMEDIATE = Buffer.from('3082010a02820101000badcafe', 'hex');
export const ROOT = Buffer.from('3082010a0282010100deadbeef00', 'hex');

/** `der` as an RFC 7468 PEM block, 64 characters a line. */
export function pem(der: Buffer, eol = '\n'): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----${eol}${lines.join(eol)}${eol}-----END CERTIFICATE-----${eol}`;
}

/** `der` as an RFC 8941 Byte Sequence. */
export function byteSequence(der: Buffer): string {
  return `:${der.toString('base64')}:`;
}

/** The hex SHA-256 Envoy writes as `Hash`. */
export function sha256Hex(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}

/** nginx's `$ssl_client_escaped_cert` of `der` (URL-encoded PEM). */
export function escapedPem(der: Buffer): string {
  return encodeURIComponent(pem(der));
}
