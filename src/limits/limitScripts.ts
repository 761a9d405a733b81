/**
 * The Lua scripts of the shared (Redis) token limits. Each runs atomically in Redis, so
 * two replicas checking the same key at once cannot both take the last token. They
 * mirror `tokenBucket.ts` and `failedSecretBackoff.ts` exactly; the time is the
 * gateway's clock (`ARGV[1]`, ms), as for key rotation the replicas' clocks must agree.
 *
 * Every write sets a TTL so nothing outlives its meaning: a bucket expires when it would
 * be full again (a full bucket and no bucket are the same), a back-off pair when it is
 * neither waiting nor remembered (max(last failure + forgetAfter, end of the wait)).
 * Integers handed to Redis go through `%d` (a Lua number could print as `1e+12`).
 */
import { createHash } from 'node:crypto';

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
 * KEYS[1]: the (address, client) pair. ARGV: now (ms), freeFailures, baseDelayMs,
 * maxDelayMs, forgetAfter (ms). Records one failure; returns the end of the wait (ms, 0
 * when there is none).
 */
export const RECORD_FAILURE = script(`
local now = tonumber(ARGV[1])
local free = tonumber(ARGV[2])
local base = tonumber(ARGV[3])
local max = tonumber(ARGV[4])
local forget = tonumber(ARGV[5])
local state = redis.call('HMGET', KEYS[1], 'f', 'l', 'b')
local failures = tonumber(state[1]) or 0
local last = tonumber(state[2]) or 0
local blocked = tonumber(state[3]) or 0
if now >= math.max(last + forget, blocked) then
  failures = 0
  blocked = 0
end
failures = failures + 1
if failures > free then
  blocked = math.max(blocked, now + math.min(max, base * 2 ^ (failures - free - 1)))
end
redis.call('HSET', KEYS[1], 'f', string.format('%d', failures), 'l', string.format('%.17g', now), 'b', string.format('%.17g', blocked))
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(1, math.ceil(math.max(now + forget, blocked) - now))))
return string.format('%.17g', blocked)
`);
