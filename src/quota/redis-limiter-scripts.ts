// The Redis limiter's server-side scripts: one admission decision for a key and its
// account (rate, quotas, usage) and one pacing decision per bucket, each atomic.
// Their GCRA is gcra.ts's, clock-step rule included.

import { CLOCK_STEP_MS } from './gcra.js';

/**
 * What the admit and lease scripts read first: the key's rate state (TAT) and its day's
 * and month's counts, then its account's when the tier limits accounts (ARGV parsed
 * before this into kRate … aMonthly).
 */
// How long a key's usage of a day is kept (ms): longer than any history a console reads.
const USAGE_TTL = `local usageTtl = 400 * 86400000
`;

const READ_STATE = `local account = aRate >= 0 or aDaily >= 0 or aMonthly >= 0
${USAGE_TTL}local kTat = tonumber(redis.call('GET', KEYS[1]) or '0')
local kd = tonumber(redis.call('GET', KEYS[2]) or '0')
local km = tonumber(redis.call('GET', KEYS[3]) or '0')
local aTat, ad, am = 0, 0, 0
if account then
  aTat = tonumber(redis.call('GET', KEYS[6]) or '0')
  ad = tonumber(redis.call('GET', KEYS[7]) or '0')
  am = tonumber(redis.call('GET', KEYS[8]) or '0')
end
`;

/** GCRA of one call of `cost` at `now` (both locals of the script): allowed, remaining, retry ms, reset ms, the new tat. */
const GCRA = `local function gcra(tat, rate, burst)
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
`;

// Calls counted once admitted or charged: the key's and (with one) the account's day and
// month counters, and the key's usage; kd, km, ad, am as they stand after. KEYS and ARGV as ADMIT's.
const COUNT_CALLS = `kd = redis.call('INCRBY', KEYS[2], cost)
redis.call('PEXPIRE', KEYS[2], ARGV[5])
km = redis.call('INCRBY', KEYS[3], cost)
redis.call('PEXPIRE', KEYS[3], ARGV[6])
if account then
  ad = redis.call('INCRBY', KEYS[7], cost)
  redis.call('PEXPIRE', KEYS[7], ARGV[5])
  am = redis.call('INCRBY', KEYS[8], cost)
  redis.call('PEXPIRE', KEYS[8], ARGV[6])
end
redis.call('HINCRBY', KEYS[4], chain .. ':calls', cost)
redis.call('PEXPIRE', KEYS[4], usageTtl)
redis.call('SADD', KEYS[5], day)
`;

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
${READ_STATE}local function state(allowed, reason, who, remaining, retry, reset)
  return {allowed, reason, who, remaining, retry, reset, kd, km, ad, am, string.format('%.3f', kTat), string.format('%.3f', aTat)}
end
local function refuse(reason, who, remaining, retry, reset)
  redis.call('HINCRBY', KEYS[4], chain .. ':limited', cost)
  redis.call('PEXPIRE', KEYS[4], usageTtl)
  redis.call('SADD', KEYS[5], day)
  return state(0, reason, who, remaining, retry, reset)
end
${GCRA}local who, remaining, resetMs = 0, -1, 0
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
if account and aNew then
  aTat = aNew
  redis.call('SET', KEYS[6], string.format('%.3f', aNew), 'PX', math.ceil(aNew - now) + 1000)
end
${COUNT_CALLS}return state(1, '', who, remaining, 0, resetMs)
`;

/**
 * Work already done charged after the call (node work past what admission took): never
 * refused; the key's and account's rate states run ahead by `cost` (no further than
 * gcra.ts's clock-step rule lets a state be read), their counters and usage grow by it.
 * KEYS and ARGV: as ADMIT's. Returns {keyDay, keyMonth, accountDay, accountMonth, keyTat, accountTat}.
 */
export const CHARGE = `
local now, cost, chain, day = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local kRate, kBurst = tonumber(ARGV[7]), tonumber(ARGV[8])
local aRate, aBurst, aDaily, aMonthly = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14])
${READ_STATE}local function owe(key, tat, rate, burst)
  local interval = 1000 / rate
  local tolerance = interval * burst
  local base = now
  if tat > now and tat - now <= tolerance + ${CLOCK_STEP_MS} then base = tat end
  local nxt = math.min(base + interval * cost, now + tolerance + ${CLOCK_STEP_MS})
  redis.call('SET', key, string.format('%.3f', nxt), 'PX', math.ceil(nxt - now) + 1000)
  return nxt
end
if kRate >= 0 then kTat = owe(KEYS[1], kTat, kRate, kBurst) end
if account and aRate >= 0 then aTat = owe(KEYS[6], aTat, aRate, aBurst) end
${COUNT_CALLS}return {kd, km, ad, am, string.format('%.3f', kTat), string.format('%.3f', aTat)}
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

/**
 * A lease: give back what an earlier lease of the key did not spend and count its
 * usage, then take up to `want` tokens (at least `cost`, else refuse) from the key's
 * and the account's rate buckets and quotas together. A lease takes at most half of a
 * rate bucket's room and 1/`share` of what is left of a quota, so near a limit leases
 * shrink and what other instances hold stays small.
 * KEYS: as ADMIT's. ARGV: now, cost (0: only give back), want, chain, day, dayTtlMs,
 * monthTtlMs, the key's rate, burst, daily, monthly, the account's (-1 = unlimited;
 * all -1: no account), unused, share, then (chain, calls, limited) triples of usage.
 * Returns {granted (0 when refused), reason, who, remaining (-1 none), retryMs,
 * resetMs, keyDay, keyMonth, accountDay, accountMonth, keyTat, accountTat}.
 */
export const LEASE = `
local now, cost, want, chain, day = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local kRate, kBurst, kDaily, kMonthly = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local aRate, aBurst, aDaily, aMonthly = tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local unused, share = tonumber(ARGV[16]), tonumber(ARGV[17])
${READ_STATE}local function putTat(key, tat)
  if tat > now then
    redis.call('SET', key, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
  else
    redis.call('DEL', key)
  end
end
local function giveBack(key, count)
  local n = math.min(unused, count)
  if n > 0 then return redis.call('DECRBY', key, n) end
  return count
end
if unused > 0 then
  if kRate >= 0 and kTat > now then
    kTat = kTat - unused * 1000 / kRate
    putTat(KEYS[1], kTat)
  end
  kd = giveBack(KEYS[2], kd)
  km = giveBack(KEYS[3], km)
  if account then
    if aRate >= 0 and aTat > now then
      aTat = aTat - unused * 1000 / aRate
      putTat(KEYS[6], aTat)
    end
    ad = giveBack(KEYS[7], ad)
    am = giveBack(KEYS[8], am)
  end
end
local counted = false
for i = 18, #ARGV - 2, 3 do
  local calls, limited = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if calls > 0 then redis.call('HINCRBY', KEYS[4], ARGV[i] .. ':calls', calls) end
  if limited > 0 then redis.call('HINCRBY', KEYS[4], ARGV[i] .. ':limited', limited) end
  counted = true
end
local function state(granted, reason, who, remaining, retry, reset)
  return {granted, reason, who, remaining, retry, reset, kd, km, ad, am, string.format('%.3f', kTat), string.format('%.3f', aTat)}
end
if cost == 0 then
  if counted then
    redis.call('PEXPIRE', KEYS[4], usageTtl)
    redis.call('SADD', KEYS[5], day)
  end
  return state(0, '', 0, -1, 0, 0)
end
local function refuse(reason, who, remaining, retry, reset)
  redis.call('HINCRBY', KEYS[4], chain .. ':limited', cost)
  redis.call('PEXPIRE', KEYS[4], usageTtl)
  redis.call('SADD', KEYS[5], day)
  return state(0, reason, who, remaining, retry, reset)
end
-- A GCRA bucket's room: tokens it can give now, from which base, at which interval.
local function room(tat, rate, burst)
  local interval = 1000 / rate
  local tolerance = interval * burst
  local base = now
  if tat > now and tat - now <= tolerance + ${CLOCK_STEP_MS} then base = tat end
  return math.max(0, math.floor((now + tolerance - base) / interval + 1e-6)), base, interval, tolerance
end
local grant = want
local kRoom, kBase, kInterval, aRoom, aBase, aInterval
if kRate >= 0 then
  local n, base, interval, tolerance = room(kTat, kRate, kBurst)
  if n < cost then return refuse('rate', 0, n, math.ceil(base + interval * cost - tolerance - now), math.ceil(base - now)) end
  kRoom, kBase, kInterval = n, base, interval
  grant = math.min(grant, math.max(cost, math.floor(n / 2)))
end
if account and aRate >= 0 then
  local n, base, interval, tolerance = room(aTat, aRate, aBurst)
  if n < cost then return refuse('rate', 1, n, math.ceil(base + interval * cost - tolerance - now), math.ceil(base - now)) end
  aRoom, aBase, aInterval = n, base, interval
  grant = math.min(grant, math.max(cost, math.floor(n / 2)))
end
local function fits(limit, used)
  if limit < 0 then return true end
  local left = limit - used
  if left < cost then return false end
  grant = math.min(grant, math.max(cost, math.floor(left / share)))
  return true
end
if not fits(kDaily, kd) then return refuse('daily', 0, 0, 0, 0) end
if not fits(kMonthly, km) then return refuse('monthly', 0, 0, 0, 0) end
if account and not fits(aDaily, ad) then return refuse('daily', 1, 0, 0, 0) end
if account and not fits(aMonthly, am) then return refuse('monthly', 1, 0, 0, 0) end
local who, remaining, resetMs = 0, -1, 0
if kBase then
  kTat = kBase + kInterval * grant
  putTat(KEYS[1], kTat)
  remaining, resetMs = kRoom - grant, math.ceil(kTat - now)
end
kd = redis.call('INCRBY', KEYS[2], grant)
redis.call('PEXPIRE', KEYS[2], ARGV[6])
km = redis.call('INCRBY', KEYS[3], grant)
redis.call('PEXPIRE', KEYS[3], ARGV[7])
if account then
  if aBase then
    aTat = aBase + aInterval * grant
    putTat(KEYS[6], aTat)
    if remaining < 0 or aRoom - grant < remaining then who, remaining, resetMs = 1, aRoom - grant, math.ceil(aTat - now) end
  end
  ad = redis.call('INCRBY', KEYS[7], grant)
  redis.call('PEXPIRE', KEYS[7], ARGV[6])
  am = redis.call('INCRBY', KEYS[8], grant)
  redis.call('PEXPIRE', KEYS[8], ARGV[7])
end
if counted then
  redis.call('PEXPIRE', KEYS[4], usageTtl)
  redis.call('SADD', KEYS[5], day)
end
return state(grant, '', who, remaining, 0, resetMs)
`;

/**
 * A request that became no call: `cost` against the key's and the account's rate only
 * (no quota), counted once in the usage field `field` (invalid or limited), or as
 * limited when a rate refuses it.
 * KEYS: key tat, key usage hash (day), key usage day set, account tat.
 * ARGV: now, cost, chain, day, field, the key's rate and burst, the account's (-1 = unlimited).
 * Returns {allowed, who (0 key, 1 account), remaining (-1 none), retryMs, resetMs, keyTat, accountTat}.
 */
export const CHARGE_REFUSED = `
local now, cost, chain, day, field = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
${USAGE_TTL}
local kRate, kBurst, aRate, aBurst = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local kTat = tonumber(redis.call('GET', KEYS[1]) or '0')
local aTat = 0
if aRate >= 0 then aTat = tonumber(redis.call('GET', KEYS[4]) or '0') end
${GCRA}local function counted(what)
  redis.call('HINCRBY', KEYS[2], chain .. ':' .. what, 1)
  redis.call('PEXPIRE', KEYS[2], usageTtl)
  redis.call('SADD', KEYS[3], day)
end
local function refuse(who, rem, retry, reset)
  counted('limited')
  return {0, who, rem, retry, reset, string.format('%.3f', kTat), string.format('%.3f', aTat)}
end
local who, remaining, resetMs = 0, -1, 0
local kNew, aNew = nil, nil
if kRate >= 0 then
  local ok, rem, retry, reset, tat = gcra(kTat, kRate, kBurst)
  if not ok then return refuse(0, rem, retry, reset) end
  kNew, remaining, resetMs = tat, rem, reset
end
if aRate >= 0 then
  local ok, rem, retry, reset, tat = gcra(aTat, aRate, aBurst)
  if not ok then return refuse(1, rem, retry, reset) end
  aNew = tat
  if remaining < 0 or rem < remaining then who, remaining, resetMs = 1, rem, reset end
end
if kNew then
  kTat = kNew
  redis.call('SET', KEYS[1], string.format('%.3f', kNew), 'PX', math.ceil(kNew - now) + 1000)
end
if aNew then
  aTat = aNew
  redis.call('SET', KEYS[4], string.format('%.3f', aNew), 'PX', math.ceil(aNew - now) + 1000)
end
counted(field)
return {1, who, remaining, 0, resetMs, string.format('%.3f', kTat), string.format('%.3f', aTat)}
`;
