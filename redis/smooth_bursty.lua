-- ratesim smooth_bursty: Guava's RateLimiter (SmoothBursty), atomically in Redis.
--
-- Rule (ratesim docs/semantics.md §5): a token balance T that may be
-- negative (debt), at a key's first request 0 (start = empty, as Guava) or
-- capacity (start = full). At now:
-- T = min(capacity, T + rate * (now - last)), with rate = limit / window_us
-- per microsecond. A request is admitted iff T >= 0 — whatever its cost,
-- even above capacity — and then T -= cost: the next caller pays. Guava's
-- maxPermits = rate * maxBurstSeconds is capacity.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us capacity start
-- Arguments: now_us, cost, limit, window_us and capacity whole numbers in
--          ASCII digits (at most 16): now_us from 0, the others from 1,
--          each at most 2^53 - 1, and jointly in the exact range below;
--          start "empty" or "full". Anything else ("1.5", "1e3", "0x10",
--          " 5", "", a negative or larger number, another word or count of
--          arguments) is an error reply "ERR smooth_bursty: <argument> ..."
--          naming what it got and what it takes, and the key is untouched.
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: the whole
--          microseconds, rounded up, until the debt is paid (-T / rate).
--          Then the RateLimit fields (docs/semantics.md §11) after this
--          decision, {outcome, wait_us, R, T}: R = remaining, -1 while
--          nothing is owed (any cost passes: a gateway writes the policy
--          limit then), else 0; T = reset_us, the microseconds, rounded up,
--          until the balance is back to capacity (with start = "empty" never
--          a fresh key's state again, but the most it can hold).
--          A caller that reads only the first two values is unaffected.
-- Clock behind: a caller whose now_us is behind the key's last update (l,
--          written by a gateway whose clock is ahead) is decided at l (no
--          refill, l never moves back) and its retry-after adds l - now_us:
--          it is counted on the caller's own clock.
--
-- Exact: T is kept multiplied by window_us, so a refill of dt microseconds
-- adds dt * limit exactly. Every intermediate stays an exact integer below
-- 2^53 when
--   now_us < 2^53,  (capacity + cost) * window_us + limit < 2^53.
-- A wait of 2^53 us or more (285 years, only ever from a clock behind) may
-- be off by one.
--
-- State: hash KEY {t = T * window_us, l = last update, us}.
-- Expiry: with start = full, PEXPIRE to the moment the balance is full
-- again, when the key decides as a fresh one. With start = empty a key
-- never returns to its fresh state once it has refilled (a fresh key has
-- nothing; a rested one has capacity), so no expiry is set: an idle key
-- keeps its hash. Garbage collection only; the time is the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b) return idiv(a + b - 1, b) end

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

if #KEYS ~= 1 or #ARGV ~= 6 then
  return redis.error_reply(string.format('ERR smooth_bursty: takes 1 key and 6 arguments (now_us cost limit window_us capacity start), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, window = arg(3, 'limit', 1, MAX), arg(4, 'window_us', 1, MAX)
local capacity = arg(5, 'capacity', 1, MAX)
local start = arg(6, 'start', {'empty', 'full'})
if not bad and (capacity + cost) * window + limit > MAX then
  bad = string.format('(capacity + cost) * window_us + limit must be below 2^53: capacity %d, cost %d, window_us %d, limit %d', capacity, cost, window, limit)
end
if bad then return redis.error_reply('ERR smooth_bursty: ' .. bad) end

local full = capacity * window
local stored = redis.call('HMGET', KEYS[1], 't', 'l')
local balance, last
if stored[1] then
  balance, last = tonumber(stored[1]), tonumber(stored[2])
elseif start == 'full' then
  balance, last = full, now
else
  balance, last = 0, now
end
if now > last then
  local dt = now - last
  -- Refill, without forming dt * limit when it would overflow the bucket.
  if dt >= cdiv(full - balance, limit) then balance = full
  else balance = balance + dt * limit end
  last = now
end

-- Decided at last = max(now, l); waits count from now.
local behind = last - now

-- The RateLimit fields of the balance as it is, at now.
local function fields()
  return balance >= 0 and -1 or 0, cdiv(full - balance, limit) + behind
end

if balance < 0 then
  return {0, cdiv(-balance, limit) + behind, fields()}
end
balance = balance - cost * window
redis.call('HSET', KEYS[1], 't', int(balance), 'l', int(last))
if start == 'full' then
  local fresh_in_us = cdiv(full - balance, limit) + behind
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, cdiv(fresh_in_us, 1000))))
end
return {1, 0, fields()}
