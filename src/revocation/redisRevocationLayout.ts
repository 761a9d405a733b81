/**
 * How the Redis revocation store lays its data out in Redis (Redis ≥ 6.2: `ZADD GT`,
 * `ZMSCORE`), and the scripts that read and write it. Every name starts with
 * `redis.keyPrefix`:
 *
 *   <prefix>revocation:tokens    sorted set: member jti,      score = entry expiry (s)
 *   <prefix>revocation:clients   sorted set: member clientId, score = entry expiry (s)
 *   <prefix>revocation:cutoffs   sorted set: member clientId, score = iat cut-off (s)
 *   <prefix>revocation:events    pub/sub channel: one message per revocation
 *   <prefix>revocation:marker    string, no TTL: the list's generation, a random id
 *
 * In a Redis Cluster the names carry the hash tag `{<prefix>revocation}` (e.g.
 * `{portaria:revocation}:tokens`), so that every script's keys share one slot; elsewhere
 * they stay as above, the names earlier releases wrote.
 *
 * Sorted sets, not a key per entry: a full load is a `ZSCAN` of the list alone, O(entries),
 * whatever else shares the database, and merging is order-free and atomic (`ZADD GT` keeps
 * the later expiry and cut-off, as the in-memory store does). Each set expires
 * (`EXPIREAT`) at its latest entry's expiry, so the list goes away by itself once nothing
 * in it matters; that also makes the sets evictable under any `maxmemory-policy` but
 * `noeviction`.
 *
 * The marker (no TTL) is how every replica that still knows entries notices lost data: a
 * full sync reads it or creates it (`MARKER_SCRIPT`); the heartbeat (`HEARTBEAT_SCRIPT`)
 * returns it and deletes it when a set the replica holds live entries for is missing; a
 * write that creates a set deletes it too, unless the writer's own sync just made it (the
 * set was evicted, or merely expired: the harmless case costs one full sync per replica). A
 * missing or different id starts a full sync that writes back what the replica knows. The
 * write script stores and announces in one step, so no entry is stored or made stricter
 * unannounced; the message is a `revocationLogRecord` line without its newline.
 */
import type { RevocationRecord } from './revocationLogRecord.js';

export interface RevocationKeys {
  readonly tokens: string;
  readonly clients: string;
  readonly cutoffs: string;
  readonly channel: string;
  readonly marker: string;
}

export function revocationKeys(prefix: string, clustered = false): RevocationKeys {
  const base = clustered ? `{${prefix}revocation}:` : `${prefix}revocation:`;
  return {
    tokens: `${base}tokens`,
    clients: `${base}clients`,
    cutoffs: `${base}cutoffs`,
    channel: `${base}events`,
    marker: `${base}marker`,
  };
}

/**
 * KEYS: tokens, clients, cutoffs, marker. ARGV: kind, id, expiresAt, issuedBefore (or
 * ''), channel, message, fresh (the generation the writer's running sync created, or '').
 * Returns 1 when the entry was new or made stricter (and announced), 0 when Redis already
 * held it as strict: then every synchronised replica has it too, so replays and
 * write-backs by many replicas cost no messages. When the write creates a set, the marker
 * is deleted (unless it is `fresh`): see the header.
 */
export const WRITE_SCRIPT = `
local set = KEYS[1]
local changed = 0
local created = false
if ARGV[1] == 'client' then
  set = KEYS[2]
  created = redis.call('EXISTS', KEYS[3]) == 0
  changed = redis.call('ZADD', KEYS[3], 'GT', 'CH', ARGV[4], ARGV[2])
end
if redis.call('EXISTS', set) == 0 then created = true end
changed = changed + redis.call('ZADD', set, 'GT', 'CH', ARGV[3], ARGV[2])
if changed == 0 then return 0 end
if created then
  local marker = redis.call('GET', KEYS[4])
  if marker and marker ~= ARGV[7] then redis.call('DEL', KEYS[4]) end
end
local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
local at = math.ceil(tonumber(last[2]))
redis.call('EXPIREAT', set, at)
if ARGV[1] == 'client' then redis.call('EXPIREAT', KEYS[3], at) end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`;

/**
 * KEYS: marker. ARGV: a new random id. Returns the generation: the marker's value, or the
 * new id after storing it when the marker was absent (the caller created it when the
 * value returned is its own id).
 */
export const MARKER_SCRIPT = `
local id = redis.call('GET', KEYS[1])
if id then return id end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`;

/**
 * KEYS: marker, tokens, clients, cutoffs. ARGV: the latest expiry (s) of the caller's
 * token entries, of its client entries (0 when none), a margin (s). A set is expected
 * while the caller holds an entry for it expiring more than the margin after Redis's
 * clock (`TIME`, the clock that expires the sets: the caller's may differ). When an
 * expected set is missing, deletes the marker (so that every replica synchronises in
 * full, not only the caller) and returns [nil, 1]; else returns [marker or nil, 0]. Reads
 * nothing else, so a heartbeat stays one short command whatever the list's size (EXISTS
 * does not touch a key's LRU clock).
 */
export const HEARTBEAT_SCRIPT = `
local after = tonumber(redis.call('TIME')[1]) + tonumber(ARGV[3])
if (tonumber(ARGV[1]) > after and redis.call('EXISTS', KEYS[2]) == 0)
  or (tonumber(ARGV[2]) > after and redis.call('EXISTS', KEYS[3], KEYS[4]) < 2) then
  redis.call('DEL', KEYS[1])
  return {false, 1}
end
return {redis.call('GET', KEYS[1]), 0}
`;

/**
 * A replica expects a set in Redis only while it holds an entry of that kind expiring
 * more than this many seconds from now, by its own clock and by Redis's (which expires
 * the sets): a set's TTL is rounded up to the second, and a replica whose clock runs a
 * little ahead sweeps entries early, so a set about to expire is no evidence of loss.
 */
export const EXPECT_MARGIN_S = 5;

/** Why a heartbeat found the list in Redis no longer the one this replica synchronised. */
export type LossReason = 'marker-missing' | 'marker-replaced' | 'set-missing';

/** Reads `HEARTBEAT_SCRIPT`'s reply against the generation the replica synchronised. */
export function heartbeatLoss(reply: unknown, generation: string | null): LossReason | undefined {
  const [marker, setMissing] = reply as [string | null, number];
  return setMissing === 1
    ? 'set-missing'
    : marker === null
      ? 'marker-missing'
      : marker !== generation
        ? 'marker-replaced'
        : undefined;
}

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

/**
 * The arguments of `WRITE_SCRIPT` after the four keys, for one record; `fresh` is the
 * generation the writer's running sync created ('' for every other write).
 */
export function writeArguments(
  record: RevocationRecord,
  channel: string,
  message: string,
  fresh = '',
): string[] {
  if (record.kind === 'token') {
    return ['token', record.tokenId, String(record.expiresAt), '', channel, message, fresh];
  }
  return [
    'client',
    record.clientId,
    String(record.expiresAt),
    String(record.issuedBefore),
    channel,
    message,
    fresh,
  ];
}
