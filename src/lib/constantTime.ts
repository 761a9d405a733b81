import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares two strings in time that depends on neither content nor length:
 * both sides are reduced to fixed-length SHA-256 digests first, then compared with
 * `timingSafeEqual` (which requires equal lengths).
 */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}
