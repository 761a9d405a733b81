/**
 * The Lua script of the shared quota meter (`redisMeter.ts`): one check is one atomic
 * script, so replicas checking one key at once can never both take the last request of
 * a window or the last token of a bucket. It mirrors `meterState.ts` (`bringUpToDate`,
 * `hasRoom`, `consume`); the reading is built by the caller from what it returns. The
 * time is the gateway's clock (`ARGV[1]`, ms): the replicas' clocks must agree.
 *
 * TTLs: the bucket expires when it would be full again (a full bucket and none are the
 * same), the window counter at the window's end plus a margin (a counter of a past
 * window is never read: its key names its window's start). A refusal and a peek write
 * nothing. Integers handed to Redis go through `%d` (a Lua number could print as `1e+12`).
 */
import { createHash } from 'node:crypto';
import type { LuaScript } from './limitScripts.js';

/**
 * KEYS[1]: the bucket (hash `t` tokens, `u` updated ms), KEYS[2]: this window's counter.
 * ARGV: now (ms), consume (1 or 0), rate (tokens per ms, 0: no bucket), burst, limit (0:
 * no quota), the counter's TTL (ms: relative, so Redis's own clock does not matter). Returns {1 allowed or 0, tokens, count}.
 */
const source = `
local now = tonumber(ARGV[1])
local consume = ARGV[2] == '1'
local rate = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local tokens = burst
local updated = now
if rate > 0 then
  local state = redis.call('HMGET', KEYS[1], 't', 'u')
  local t = tonumber(state[1])
  local u = tonumber(state[2])
  if t ~= nil and u ~= nil then
    tokens = t
    updated = u
    if now > updated then
      tokens = math.min(burst, tokens + (now - updated) * rate)
      updated = now
    end
  end
end
local count = 0
if limit > 0 then count = tonumber(redis.call('GET', KEYS[2]) or '0') end
local allowed = (rate == 0 or tokens >= 1) and (limit == 0 or count < limit)
if allowed and consume then
  if rate > 0 then
    tokens = tokens - 1
    redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'u', string.format('%.17g', updated))
    redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(1, math.ceil((burst - tokens) / rate))))
  end
  if limit > 0 then
    count = redis.call('INCR', KEYS[2])
    if redis.call('PTTL', KEYS[2]) < 0 then
      redis.call('PEXPIRE', KEYS[2], ARGV[6])
    end
  end
end
return {allowed and 1 or 0, string.format('%.17g', tokens), count}
`;

export const CHECK_QUOTA: LuaScript = {
  source,
  sha1: createHash('sha1').update(source).digest('hex'),
};
