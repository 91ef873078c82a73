-- ratesim token_bucket: a token bucket, decided atomically in Redis.
--
-- Rule (ratesim docs/semantics.md §2): the bucket starts full; tokens refill
-- continuously at rate = limit / window_us per microsecond, capped at
-- capacity; a request of `cost` is admitted iff tokens >= cost, which then
-- pays cost. A rejected request changes nothing.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us capacity
-- Arguments: whole numbers in ASCII digits (at most 16): now_us from 0,
--          the others from 1, each at most 2^53 - 1, and jointly in the
--          exact range below. Anything else ("1.5", "1e3", "0x10", " 5",
--          "", a negative or larger number, another count of arguments) is
--          an error reply "ERR token_bucket: <argument> ..." naming what it
--          got and what it takes, and the key is untouched.
-- Returns: {1, 0, R, T} admitted; {0, retry_after_us, R, T} rejected,
--          retry_after_us the least whole number of microseconds after which
--          the same request would pass, or -1 when it never can
--          (cost > capacity). Then the RateLimit fields (docs/semantics.md
--          §11) after this decision: R = remaining, the whole tokens the
--          bucket holds now (the largest cost admitted at this instant; 0
--          when none), and T = reset_us, the microseconds, rounded up, until
--          the bucket is full again (a fresh key's state; 0 when it is).
--          A caller that reads only the first two values is unaffected.
-- Clock behind: a caller whose now_us is behind the key's last update (l,
--          written by a gateway whose clock is ahead) is decided at l (no
--          refill, l never moves back) and its retry-after adds l - now_us:
--          it is counted on the caller's own clock.
--
-- Exact: integer arithmetic only. Tokens are kept multiplied by window_us,
-- so a refill of dt microseconds adds dt * limit exactly. Every
-- intermediate stays an exact integer below 2^53 when
--   now_us < 2^53,  (capacity + cost) * window_us + limit < 2^53.
-- (A microsecond Unix clock, 1.7e15 today, is within range for centuries.)
-- A wait of 2^53 us or more (285 years, only ever from a clock behind) may
-- be off by one.
--
-- State: hash KEY {b = tokens * window_us, l = last update, us}.
-- Expiry: PEXPIRE to the moment the bucket is full again, when the key's
-- state equals a fresh key's; expiry is garbage collection only and never
-- changes a decision. The time (now_us) is the caller's, never Redis's, so
-- gateways share one clock and tests can run in virtual time.

local function int(x) return string.format('%d', x) end

-- floor(a / b) for integers 0 <= a < 2^53, 0 < b: exact, although a / b
-- is a double.
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

if #KEYS ~= 1 or #ARGV ~= 5 then
  return redis.error_reply(string.format('ERR token_bucket: takes 1 key and 5 arguments (now_us cost limit window_us capacity), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, window = arg(3, 'limit', 1, MAX), arg(4, 'window_us', 1, MAX)
local capacity = arg(5, 'capacity', 1, MAX)
if not bad and (capacity + cost) * window + limit > MAX then
  bad = string.format('(capacity + cost) * window_us + limit must be below 2^53: capacity %d, cost %d, window_us %d, limit %d', capacity, cost, window, limit)
end
if bad then return redis.error_reply('ERR token_bucket: ' .. bad) end

local full, need = capacity * window, cost * window

local stored = redis.call('HMGET', KEYS[1], 'b', 'l')
local balance, last = full, now
if stored[1] then balance, last = tonumber(stored[1]), tonumber(stored[2]) end
if now > last then
  -- Refill, without forming dt * limit when it would overflow the bucket.
  local dt = now - last
  if dt >= cdiv(full - balance, limit) then balance = full
  else balance = balance + dt * limit end
  last = now
end
-- Decided at last = max(now, l); waits count from now.
local behind = last - now

-- The RateLimit fields of the bucket as it is: whole tokens, and the time
-- until it is full (counted from now).
local function fields()
  return idiv(balance, window), cdiv(full - balance, limit) + behind
end

if cost > capacity then return {0, -1, fields()} end
if balance < need then
  return {0, cdiv(need - balance, limit) + behind, fields()}
end
balance = balance - need
redis.call('HSET', KEYS[1], 'b', int(balance), 'l', int(last))
local fresh_in_us = cdiv(full - balance, limit) + behind
redis.call('PEXPIRE', KEYS[1], int(math.max(1, cdiv(fresh_in_us, 1000))))
return {1, 0, fields()}
