-- ratesim gcra: the generic cell rate algorithm, decided atomically in Redis.
--
-- Rule (ratesim docs/semantics.md §2): emission interval
-- T = window_us / limit, tolerance tau = (burst - 1) * T, theoretical
-- arrival time TAT from 0. A request of cost > burst never conforms;
-- otherwise it conforms iff
--   now >= TAT - tau + (cost - 1) * T,
-- and then TAT = max(TAT, now) + cost * T. Decisions equal a token bucket
-- of capacity = burst (in order; see Clock behind); the state is one
-- timestamp. (redis-cell's
-- max_burst = b is burst = b + 1.)
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us burst
-- Arguments: whole numbers in ASCII digits (at most 16): now_us from 0,
--          the others from 1, each at most 2^53 - 1, and jointly in the
--          exact range below. Anything else ("1.5", "1e3", "0x10", " 5",
--          "", a negative or larger number, another count of arguments) is
--          an error reply "ERR gcra: <argument> ..." naming what it got and
--          what it takes, and the key is untouched.
-- Returns: {1, 0, R, T} admitted; {0, retry_after_us, R, T} rejected,
--          retry_after_us the least whole number of microseconds after which
--          the same request would pass, or -1 when it never can
--          (cost > burst). Then the RateLimit fields (docs/semantics.md §11)
--          after this decision: R = remaining, the largest cost that
--          conforms now, burst - ceil((TAT - now) / T) and at least 0; and
--          T = reset_us, the microseconds, rounded up, until TAT (from then
--          on the key decides as a fresh one; 0 when it already does).
--          A caller that reads only the first two values is unaffected.
-- Clock behind: the state is TAT alone, which never moves back (TAT =
--          max(TAT, now) + cost * T). A caller whose now_us is behind
--          another gateway's is decided at its own now_us against that TAT,
--          and its retry-after runs to the same moment as that gateway's
--          would: the difference is counted on the caller's own clock. (No
--          time of the last update is kept, so where a token bucket read at
--          that time would still admit, a caller behind it by d may be
--          rejected with a retry-after of at most d.)
--
-- Exact: TAT is kept as whole microseconds u plus a fraction f / limit
-- (0 <= f < limit), so absolute times are never multiplied by the rate.
-- Every intermediate stays an exact integer below 2^53 when
--   now_us + burst * window_us / limit < 2^53,  burst * window_us + limit < 2^53.
--
-- State: KEY is a plain string holding TAT: "u" when TAT is a whole
-- microsecond (always, when window_us / limit is whole), else "u:f".
-- (Redis keeps "u" as an integer: a smaller key than a hash or "u:f".)
-- A hash {u, f}, as earlier versions of this script kept TAT, is read as
-- the same TAT and replaced by the string; a string that is no TAT is an
-- error reply "ERR gcra: KEY holds ...", and the key is untouched.
-- Expiry: SET ... PX to TAT: from then on the key decides as a fresh one
-- (TAT <= now). Garbage collection only; the time is the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

-- ARGV[i] as argument `name`: one of the words of the list lo, or a whole
-- number from lo to hi written in ASCII digits as Redis writes them (no
-- leading zero, no "-0"; at most 16 digits; a '-' only to
-- call it negative), never what tonumber alone reads (hex, exponents,
-- spaces, fractions). Else nil, and `bad` keeps the first error.
local MAX, bad = 9007199254740991, nil -- 2^53 - 1
local function arg(i, name, lo, hi)
  local s, takes = ARGV[i], nil
  if type(lo) == 'table' then
    for _, word in ipairs(lo) do if s == word then return s end end
    takes = 'must be "' .. table.concat(lo, '" or "') .. '"'
  else
    local digits = s == '0' and s or string.match(s, '^%-?([1-9]%d*)$')
    local n = digits and #digits <= 16 and tonumber(s)
    if n and n >= lo and n <= hi then return n end
    takes = string.format('%s a whole number from %d to %d',
      (n and n < 0) and 'is negative; it must be' or 'must be', lo, hi)
  end
  bad = bad or string.format('%s %s %s', name, (string.format('%q', s):gsub('\n', 'n')), takes)
end

if #KEYS ~= 1 or #ARGV ~= 5 then
  return redis.error_reply(string.format('ERR gcra: takes 1 key and 5 arguments (now_us cost limit window_us burst), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, window = arg(3, 'limit', 1, MAX), arg(4, 'window_us', 1, MAX)
local burst = arg(5, 'burst', 1, MAX)
if not bad and burst * window + limit > MAX then
  bad = string.format('burst * window_us + limit must be below 2^53: burst %d, window_us %d, limit %d', burst, window, limit)
elseif not bad and now + idiv(burst * window, limit) > MAX then
  bad = string.format('now_us + burst * window_us / limit must be below 2^53: now_us %d, burst %d, window_us %d, limit %d', now, burst, window, limit)
end
if bad then return redis.error_reply('ERR gcra: ' .. bad) end

-- n emission intervals, n * window_us / limit, as whole us and fraction.
local function intervals(n)
  local scaled = n * window
  local u = idiv(scaled, limit)
  return u, scaled - u * limit
end

local stored, tu, tf = redis.pcall('GET', KEYS[1]), 0, 0
if type(stored) == 'table' then
  -- Not a string: the hash {u, f} of an earlier version of this script.
  stored = redis.call('HMGET', KEYS[1], 'u', 'f')
  if stored[1] then tu, tf = tonumber(stored[1]), tonumber(stored[2]) end
elseif stored then
  local u, f = string.match(stored, '^(%d+):?(%d*)$')
  if not u then
    return redis.error_reply(string.format('ERR gcra: KEY holds %q, which is no TAT', stored))
  end
  tu, tf = tonumber(u), tonumber(f) or 0
end

-- The RateLimit fields of TAT as it is, at now. (TAT - now)/T is
-- ((tu - now) * limit + tf) / window_us, counted only while it is within
-- burst emission intervals (beyond, nothing conforms).
local function fields()
  if tu < now or (tu == now and tf == 0) then return burst, 0 end
  local ahead, remaining = tu - now, 0
  if ahead <= idiv(burst * window, limit) then
    local scaled = ahead * limit + tf
    remaining = math.max(0, burst - idiv(scaled + window - 1, window))
  end
  return remaining, ahead + (tf > 0 and 1 or 0)
end
if cost > burst then return {0, -1, fields()} end

-- Earliest conforming moment: TAT - (burst - cost) * T.
local du, df = intervals(burst - cost)
local eu, ef = tu - du, tf - df
if ef < 0 then eu, ef = eu - 1, ef + limit end
if now < eu or (now == eu and ef > 0) then
  return {0, eu - now + (ef > 0 and 1 or 0), fields()}
end

if now > tu or (now == tu and tf == 0) then tu, tf = now, 0 end
local cu, cf = intervals(cost)
tu, tf = tu + cu, tf + cf
if tf >= limit then tu, tf = tu + 1, tf - limit end
local fresh_in_us = tu - now + (tf > 0 and 1 or 0)
local tat = tf > 0 and int(tu) .. ':' .. int(tf) or int(tu)
redis.call('SET', KEYS[1], tat, 'PX', int(math.max(1, idiv(fresh_in_us + 999, 1000))))
return {1, 0, fields()}
