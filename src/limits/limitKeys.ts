/**
 * The keys the limits track, bounded whatever the request holds.
 *
 * A `clientId` is client-chosen (known or not: an unknown id is limited like a known
 * one, so the limiter does not reveal which ids exist). An id of 1–128 visible ASCII
 * characters is its own key; anything else (a Unicode id, one with a space, a longer
 * one) is replaced by a space and the SHA-256 of its UTF-8 bytes (the plain form never
 * holds a space, so the two forms cannot collide). A source address is an IPv4 address or an
 * IPv6 /64 (`sourceAddress`), which never holds a space, so `<address> <client>` names
 * a pair unambiguously.
 */
import { createHash } from 'node:crypto';

const PLAIN_CLIENT_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The last id and pair asked for, with their keys: one token request asks for the same
 * keys several times (the checks, the back-off, the outcome), and a key string used
 * again keeps the hash a Map computed for it.
 */
let lastClientId = '';
let lastClientKey = '';
let lastPairClientId = '';
let lastPairAddress = '';
let lastPairKey = '';

export function clientKey(clientId: string): string {
  if (clientId !== lastClientId || lastClientKey === '') {
    lastClientKey = PLAIN_CLIENT_ID.test(clientId) ? clientId : hashed(clientId);
    lastClientId = clientId;
  }
  return lastClientKey;
}

/**
 * The name of a client's entry in its address's back-off table (`addressBackoff.ts`): the
 * client key when it has at most 44 characters, else the hashed form (44 characters), so
 * a Redis back-off hash keeps its compact encoding (fields ≤ 64 bytes) whatever ids an
 * address names.
 */
export function backoffEntryKey(clientId: string): string {
  const key = clientKey(clientId);
  return key.length <= 44 ? key : hashed(clientId);
}

function hashed(clientId: string): string {
  return ` ${createHash('sha256').update(clientId).digest('base64url')}`;
}

export function pairKey(clientId: string, address: string): string {
  if (clientId !== lastPairClientId || address !== lastPairAddress || lastPairKey === '') {
    lastPairKey = `${address} ${clientKey(clientId)}`;
    lastPairClientId = clientId;
    lastPairAddress = address;
  }
  return lastPairKey;
}
