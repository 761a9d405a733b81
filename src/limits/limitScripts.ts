/**
 * The Lua scripts of the shared (Redis) limits (`redisLimiter.ts`). Each runs atomically
 * in Redis, so two replicas checking the same key at once cannot both take the last
 * token, and each check is one round trip. They mirror `tokenBucket.ts`,
 * `failedSecretBackoff.ts` and `addressBackoff.ts` exactly; the time is the gateway's
 * clock (`ARGV[1]`, ms), as for key rotation the replicas' clocks must agree.
 *
 * Every write sets a TTL so nothing outlives its meaning: a bucket expires when it would
 * be full again (a full bucket and no bucket are the same), an address's back-off hash
 * when none of its entries is waiting or remembered (max(last failure + forgetAfter, end
 * of the wait) over its fields), a known pair `KNOWN_PAIR_MS` after its last token. What
 * one address can make Redis hold is bounded: one hash of at most
 * `MAX_CLIENTS_PER_ADDRESS` + 1 fields (plus one per client it got a token for lately),
 * and its bucket. Integers handed to Redis go through `%d` (a Lua number could print as
 * `1e+12`).
 */
import { createHash } from 'node:crypto';
import { OVERFLOW } from './addressBackoff.js';

export interface LuaScript {
  readonly source: string;
  readonly sha1: string;
}

function script(source: string): LuaScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * KEYS[1]: the bucket. ARGV: now (ms), rate (tokens per ms), burst.
 * Returns 0 when a token was taken, else the milliseconds until one is available.
 */
export const TAKE_TOKEN = script(`
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 't', 'u')
local tokens = tonumber(state[1])
local updated = tonumber(state[2])
if tokens == nil or updated == nil then
  tokens = burst
  updated = now
elseif now > updated then
  tokens = math.min(burst, tokens + (now - updated) * rate)
  updated = now
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.max(1, math.ceil((1 - tokens) / rate - 1e-9))
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'u', string.format('%.17g', updated))
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(1, math.ceil((burst - tokens) / rate))))
return wait
`);

/**
 * The back-off entries of one address live in one hash, `backoff:<address>`: a field per
 * client key (or the overflow field `OVERFLOW`) holding `failures lastFailureMs
 * blockedUntilMs`. A known pair is the key `known:<address> <client>`. The scripts mirror
 * `addressBackoff.ts`: a check reads the client's own live field, else (not known) the
 * overflow field; a failure charges the client's own field when it has a live one, is
 * known, or the address has fewer than `MAX_CLIENTS_PER_ADDRESS` live client fields (dead
 * fields are dropped first when it is full), else the overflow field. The hash expires
 * when its longest-lived field would mean nothing.
 */
const ENTRY_HELPERS = `
local overflow = '${OVERFLOW}'
local function parse(value)
  if not value then return nil end
  local f, l, b = string.match(value, '^(%S+) (%S+) (%S+)$')
  return {failures = tonumber(f), last = tonumber(l), blocked = tonumber(b)}
end
local function live(entry, now, forget)
  return entry ~= nil and now < math.max(entry.last + forget, entry.blocked)
end
`;

/**
 * KEYS[1]: the address's back-off hash, KEYS[2]: the known-pair key. ARGV: now (ms),
 * client key, forgetAfter (ms). Returns {milliseconds still to wait (0: none), 1 when the
 * pair is known else 0}.
 */
export const CHECK_PAIR = script(`${ENTRY_HELPERS}
local now = tonumber(ARGV[1])
local forget = tonumber(ARGV[3])
local known = redis.call('EXISTS', KEYS[2])
local entry = parse(redis.call('HGET', KEYS[1], ARGV[2]))
if not live(entry, now, forget) then
  entry = nil
  if known == 0 then
    entry = parse(redis.call('HGET', KEYS[1], overflow))
    if not live(entry, now, forget) then entry = nil end
  end
end
local wait = 0
if entry ~= nil and entry.blocked > now then wait = math.ceil(entry.blocked - now) end
return {wait, known}
`);

/**
 * KEYS[1]: the address's back-off hash, KEYS[2]: the known-pair key. ARGV: now (ms),
 * client key, freeFailures, baseDelayMs, maxDelayMs, forgetAfter (ms), clients per
 * address. Records one failure; returns the end of the wait (ms, 0 when there is none).
 */
export const RECORD_FAILURE = script(`${ENTRY_HELPERS}
local now = tonumber(ARGV[1])
local client = ARGV[2]
local free = tonumber(ARGV[3])
local base = tonumber(ARGV[4])
local max = tonumber(ARGV[5])
local forget = tonumber(ARGV[6])
local cap = tonumber(ARGV[7])
local field = client
local entry = parse(redis.call('HGET', KEYS[1], client))
if not live(entry, now, forget) then
  entry = nil
  if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('HLEN', KEYS[1]) >= cap then
    local all = redis.call('HGETALL', KEYS[1])
    local clients = 0
    local overflowEntry = nil
    for i = 1, #all, 2 do
      local other = parse(all[i + 1])
      if not live(other, now, forget) then
        redis.call('HDEL', KEYS[1], all[i])
      elseif all[i] == overflow then
        overflowEntry = other
      else
        clients = clients + 1
      end
    end
    if clients >= cap then
      field = overflow
      entry = overflowEntry
    end
  end
end
local failures = 1
local blocked = 0
if entry ~= nil then
  failures = entry.failures + 1
  blocked = entry.blocked
end
if failures > free then
  blocked = math.max(blocked, now + math.min(max, base * 2 ^ (failures - free - 1)))
end
redis.call('HSET', KEYS[1], field, string.format('%d %.17g %.17g', failures, now, blocked))
local keep = math.max(1, math.ceil(math.max(now + forget, blocked) - now))
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', keep))
end
return string.format('%.17g', blocked)
`);

/**
 * KEYS[1]: the address's back-off hash, KEYS[2]: the known-pair key. ARGV: client key,
 * how long the pair stays known (ms). Forgets the client's own field (not the overflow)
 * and marks the pair known.
 */
export const RECORD_SUCCESS = script(`
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return 0
`);
