/**
 * How the Redis revocation store lays its data out in Redis (Redis ≥ 6.2: `ZADD GT`,
 * `ZMSCORE`). Every name starts with `redis.keyPrefix`:
 *
 *   <prefix>revocation:tokens    sorted set: member jti,      score = entry expiry (s)
 *   <prefix>revocation:clients   sorted set: member clientId, score = entry expiry (s)
 *   <prefix>revocation:cutoffs   sorted set: member clientId, score = iat cut-off (s)
 *   <prefix>revocation:events    pub/sub channel: one message per revocation
 *   <prefix>revocation:marker    string, no TTL: written at every full sync; its absence
 *                                tells a synchronised replica that Redis lost the list
 *                                (FLUSHALL, FLUSHDB, eviction) and must be written back
 *
 * Why sorted sets and not one key per entry: a full load is a `ZSCAN` of the list itself,
 * O(entries), whatever else lives in the database (the token limits' keys share it); a
 * key per entry would need a `SCAN` of the whole keyspace. Merging is order-free and
 * atomic: `ZADD GT` keeps the greater expiry and the later cut-off, as the in-memory
 * store does, so replays and concurrent writers can only make an entry stricter.
 *
 * TTLs: an entry leaves its set once its expiry passed (every replica's sweep runs
 * `ZREMRANGEBYSCORE` each minute; a load skips expired members anyway), and each set
 * carries a key TTL (`EXPIREAT`) at its latest entry's expiry, so the whole list
 * disappears by itself once nothing in it can matter — even with no gateway left.
 *
 * The write script stores and announces in one step: a replica that sees the message
 * finds the entry stored, and an entry is never stored or made stricter unannounced. The
 * message is a `revocationLogRecord` line (checked JSON) without its newline.
 */
import type { RevocationRecord } from './revocationLogRecord.js';

export interface RevocationKeys {
  readonly tokens: string;
  readonly clients: string;
  readonly cutoffs: string;
  readonly channel: string;
  readonly marker: string;
}

export function revocationKeys(prefix: string): RevocationKeys {
  return {
    tokens: `${prefix}revocation:tokens`,
    clients: `${prefix}revocation:clients`,
    cutoffs: `${prefix}revocation:cutoffs`,
    channel: `${prefix}revocation:events`,
    marker: `${prefix}revocation:marker`,
  };
}

/**
 * KEYS: tokens, clients, cutoffs. ARGV: kind, id, expiresAt, issuedBefore (or ''),
 * channel, message. Returns 1 when the entry was new or made stricter (and announced),
 * 0 when Redis already held it as strict: then every synchronised replica has it too, so
 * replays and write-backs by many replicas cost no messages.
 */
export const WRITE_SCRIPT = `
local set = KEYS[1]
local changed = 0
if ARGV[1] == 'client' then
  set = KEYS[2]
  changed = redis.call('ZADD', KEYS[3], 'GT', 'CH', ARGV[4], ARGV[2])
end
changed = changed + redis.call('ZADD', set, 'GT', 'CH', ARGV[3], ARGV[2])
if changed == 0 then return 0 end
local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
local at = math.ceil(tonumber(last[2]))
redis.call('EXPIREAT', set, at)
if ARGV[1] == 'client' then redis.call('EXPIREAT', KEYS[3], at) end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`;

/**
 * KEYS: tokens, clients, cutoffs. ARGV: now (s). Removes entries whose expiry is before
 * now, and the cut-offs of the clients removed. Returns the number of entries removed.
 */
export const SWEEP_SCRIPT = `
local now = ARGV[1]
local removed = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. now)
for i = 1, #gone do
  redis.call('ZREM', KEYS[2], gone[i])
  redis.call('ZREM', KEYS[3], gone[i])
end
return removed + #gone
`;

/** The arguments of `WRITE_SCRIPT` after the three keys, for one record. */
export function writeArguments(
  record: RevocationRecord,
  channel: string,
  message: string,
): string[] {
  if (record.kind === 'token') {
    return ['token', record.tokenId, String(record.expiresAt), '', channel, message];
  }
  return [
    'client',
    record.clientId,
    String(record.expiresAt),
    String(record.issuedBefore),
    channel,
    message,
  ];
}
