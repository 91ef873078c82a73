-- ratesim gcra: the generic cell rate algorithm, decided atomically in Redis.
--
-- Rule (ratesim DESIGN §2): emission interval T = window_us / limit,
-- tolerance tau = (burst - 1) * T, theoretical arrival time TAT from 0. A
-- request of cost > burst never conforms; otherwise it conforms iff
--   now >= TAT - tau + (cost - 1) * T,
-- and then TAT = max(TAT, now) + cost * T. Decisions equal a token bucket
-- of capacity = burst; the state is one timestamp. (redis-cell's
-- max_burst = b is burst = b + 1.)
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us burst
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected, the least whole
--          number of microseconds after which the same request would pass;
--          {0, -1} when it never can (cost > burst).
--
-- Exact: TAT is kept as whole microseconds u plus a fraction f / limit
-- (0 <= f < limit), so absolute times are never multiplied by the rate.
-- Every intermediate stays an exact integer below 2^53 when
--   now_us + burst * window_us / limit < 2^53,  burst * window_us + limit < 2^53.
--
-- State: hash KEY {u, f} = TAT.
-- Expiry: PEXPIRE to TAT: from then on the key decides as a fresh one
-- (TAT <= now). Garbage collection only; the time is the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
if not (now and cost and limit and window and burst)
    or now < 0 or cost < 1 or limit < 1 or window < 1 or burst < 1 then
  return redis.error_reply('ERR gcra: now_us cost limit window_us burst, whole numbers (now >= 0, others >= 1)')
end
if cost > burst then return {0, -1} end

-- n emission intervals, n * window_us / limit, as whole us and fraction.
local function intervals(n)
  local scaled = n * window
  local u = idiv(scaled, limit)
  return u, scaled - u * limit
end

local stored = redis.call('HMGET', KEYS[1], 'u', 'f')
local tu, tf = 0, 0
if stored[1] then tu, tf = tonumber(stored[1]), tonumber(stored[2]) end

-- Earliest conforming moment: TAT - (burst - cost) * T.
local du, df = intervals(burst - cost)
local eu, ef = tu - du, tf - df
if ef < 0 then eu, ef = eu - 1, ef + limit end
if now < eu or (now == eu and ef > 0) then
  return {0, eu - now + (ef > 0 and 1 or 0)}
end

if now > tu or (now == tu and tf == 0) then tu, tf = now, 0 end
local cu, cf = intervals(cost)
tu, tf = tu + cu, tf + cf
if tf >= limit then tu, tf = tu + 1, tf - limit end
redis.call('HSET', KEYS[1], 'u', int(tu), 'f', int(tf))
local fresh_in_us = tu - now + (tf > 0 and 1 or 0)
redis.call('PEXPIRE', KEYS[1], int(math.max(1, idiv(fresh_in_us + 999, 1000))))
return {1, 0}
