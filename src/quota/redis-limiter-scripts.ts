// The Redis limiter's server-side scripts: one admission decision for a key and its
// account (rate, quotas, usage) and one pacing decision per bucket, each atomic.
// Their GCRA is gcra.ts's, clock-step rule included.

import { CLOCK_STEP_MS } from './gcra.js';

/**
 * KEYS: key tat, key day counter, key month counter, key usage hash (day), key usage
 * day set, account tat, account day counter, account month counter.
 * ARGV: now, cost, chain, day, dayTtlMs, monthTtlMs, then the key's rate, burst,
 * daily, monthly and the account's (-1 = unlimited; the account's all -1: no account).
 * Returns {allowed, reason, who (0 key, 1 account), remaining (-1 none), retryMs,
 * resetMs, keyDay, keyMonth, accountDay, accountMonth, keyTat, accountTat}, the
 * counters and tats as they stand after the decision.
 */
export const ADMIT = `
local now, cost, chain, day = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local kRate, kBurst, kDaily, kMonthly = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local aRate, aBurst, aDaily, aMonthly = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14])
local account = aRate >= 0 or aDaily >= 0 or aMonthly >= 0
local usageTtl = 400 * 86400000
local kTat = tonumber(redis.call('GET', KEYS[1]) or '0')
local kd = tonumber(redis.call('GET', KEYS[2]) or '0')
local km = tonumber(redis.call('GET', KEYS[3]) or '0')
local aTat, ad, am = 0, 0, 0
if account then
  aTat = tonumber(redis.call('GET', KEYS[6]) or '0')
  ad = tonumber(redis.call('GET', KEYS[7]) or '0')
  am = tonumber(redis.call('GET', KEYS[8]) or '0')
end
local function state(allowed, reason, who, remaining, retry, reset)
  return {allowed, reason, who, remaining, retry, reset, kd, km, ad, am, string.format('%.3f', kTat), string.format('%.3f', aTat)}
end
local function refuse(reason, who, remaining, retry, reset)
  redis.call('HINCRBY', KEYS[4], chain .. ':limited', cost)
  redis.call('PEXPIRE', KEYS[4], usageTtl)
  redis.call('SADD', KEYS[5], day)
  return state(0, reason, who, remaining, retry, reset)
end
-- GCRA: allowed, remaining, retry ms, reset ms, the new tat.
local function gcra(tat, rate, burst)
  local interval = 1000 / rate
  local tolerance = interval * burst
  local base = now
  if tat > now and tat - now <= tolerance + ${CLOCK_STEP_MS} then base = tat end
  local nxt = base + interval * cost
  if now < nxt - tolerance then
    return false, math.max(0, math.floor((tolerance - (base - now)) / interval)), math.ceil(nxt - tolerance - now), math.ceil(base - now), tat
  end
  return true, math.max(0, math.floor((tolerance - (nxt - now)) / interval)), 0, math.ceil(nxt - now), nxt
end
local who, remaining, resetMs = 0, -1, 0
local kNew, aNew = nil, nil
if kRate >= 0 then
  local ok, rem, retry, reset, tat = gcra(kTat, kRate, kBurst)
  if not ok then return refuse('rate', 0, rem, retry, reset) end
  kNew, remaining, resetMs = tat, rem, reset
end
if account and aRate >= 0 then
  local ok, rem, retry, reset, tat = gcra(aTat, aRate, aBurst)
  if not ok then return refuse('rate', 1, rem, retry, reset) end
  aNew = tat
  if remaining < 0 or rem < remaining then who, remaining, resetMs = 1, rem, reset end
end
if kDaily >= 0 and kd + cost > kDaily then return refuse('daily', 0, 0, 0, 0) end
if kMonthly >= 0 and km + cost > kMonthly then return refuse('monthly', 0, 0, 0, 0) end
if account and aDaily >= 0 and ad + cost > aDaily then return refuse('daily', 1, 0, 0, 0) end
if account and aMonthly >= 0 and am + cost > aMonthly then return refuse('monthly', 1, 0, 0, 0) end
if kNew then
  kTat = kNew
  redis.call('SET', KEYS[1], string.format('%.3f', kNew), 'PX', math.ceil(kNew - now) + 1000)
end
kd = redis.call('INCRBY', KEYS[2], cost)
redis.call('PEXPIRE', KEYS[2], ARGV[5])
km = redis.call('INCRBY', KEYS[3], cost)
redis.call('PEXPIRE', KEYS[3], ARGV[6])
if account then
  if aNew then
    aTat = aNew
    redis.call('SET', KEYS[6], string.format('%.3f', aNew), 'PX', math.ceil(aNew - now) + 1000)
  end
  ad = redis.call('INCRBY', KEYS[7], cost)
  redis.call('PEXPIRE', KEYS[7], ARGV[5])
  am = redis.call('INCRBY', KEYS[8], cost)
  redis.call('PEXPIRE', KEYS[8], ARGV[6])
end
redis.call('HINCRBY', KEYS[4], chain .. ':calls', cost)
redis.call('PEXPIRE', KEYS[4], usageTtl)
redis.call('SADD', KEYS[5], day)
return state(1, '', who, remaining, 0, resetMs)
`;

/** KEYS: the bucket's tat. ARGV: now, interval ms, tolerance ms. Returns 0 admitted, else ms to wait. */
export const THROTTLE = `
local now, interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local base = now
if tat > now and tat - now <= tolerance + ${CLOCK_STEP_MS} then base = tat end
local nxt = base + interval
if now < nxt - tolerance then return math.ceil(nxt - tolerance - now) end
redis.call('SET', KEYS[1], string.format('%.3f', nxt), 'PX', math.ceil(nxt - now) + 1000)
return 0
`;
