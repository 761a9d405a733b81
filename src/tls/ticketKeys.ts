/**
 * Session-ticket keys (RFC 5077; TLS 1.3 resumption, RFC 8446 §4.6.1) derived from a
 * base and the trust material: HKDF-SHA-256 (RFC 5869) of the base, salted with the
 * digest of the client CA and CRL files. So a resumed session never outlives a change of
 * what verifies client certificates — a session a revoked certificate opened cannot
 * resume once the new CRL is loaded — while a change of the server certificate alone
 * keeps every session resumable. Every worker of a group derives the same keys from the
 * same base (node:cluster hands the first worker's to the others) and the same files.
 */
import { hkdfSync, randomBytes } from 'node:crypto';

/** Node's ticket-key size: a 16-byte name, a 16-byte HMAC key, a 16-byte AES key. */
export const TICKET_KEYS_BYTES = 48;

export function newTicketBase(): Buffer {
  return randomBytes(TICKET_KEYS_BYTES);
}

export function ticketKeysFor(base: Buffer, trustDigest: Buffer): Buffer {
  return Buffer.from(
    hkdfSync('sha256', base, trustDigest, 'portaria session tickets', TICKET_KEYS_BYTES),
  );
}
