-- ratesim fixed_window: a fixed-window counter, decided atomically in Redis.
--
-- Rule (ratesim docs/semantics.md §2 and §5): a request of `cost` is
-- admitted iff count + cost <= limit in its window; admitted cost adds to
-- the count, and with count_rejected = 1 rejected cost does too.
--   align = epoch:     windows [k * window_us, (k + 1) * window_us) from 0.
--   align = first_hit: a key has no window until a request arrives; that
--     request opens [s, s + window_us) with count 0, whatever its outcome,
--     and a request at now >= s + window_us opens a new one at now
--     (Redis INCR + EXPIRE set on the first increment; Python limits'
--     FixedWindow with count_rejected = 1). envoyproxy/ratelimit is epoch
--     with count_rejected = 1.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us count_rejected align
-- Arguments: now_us, cost, limit and window_us whole numbers in ASCII digits
--          (at most 16): now_us from 0, the others from 1, each at most
--          2^53 - 1, and jointly in the exact range below; count_rejected 0
--          or 1; align "epoch" or "first_hit". Anything else ("1.5", "1e3",
--          "0x10", " 5", "", a negative or larger number, another word or
--          count of arguments) is an error reply "ERR fixed_window:
--          <argument> ..." naming what it got and what it takes, and the
--          key is untouched.
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: until the window
--          ends; {0, -1} when the request never can pass (cost > limit).
--          Then the RateLimit fields (docs/semantics.md §11) after this
--          decision, {outcome, wait_us, R, T}: R = remaining, limit less
--          the window's count (at least 0); T = reset_us, the microseconds
--          until the window ends (epoch: 0 while its count is 0, a fresh
--          key's state). A caller that reads only the first two values is
--          unaffected.
-- Clock behind: a caller whose now_us falls before the key's window (s,
--          opened by a gateway whose clock is ahead) is decided in that
--          window, at s: the window never moves back, and the retry-after,
--          s + window_us - now_us, counts the difference on the caller's own
--          clock. (Within one window the time does not change a decision.)
--
-- Exact: whole numbers only; every intermediate stays below 2^53 when
--   now_us + window_us < 2^53 and the count (with count_rejected, the sum
--   of the costs of one window's requests) < 2^53: a request that would
--   count past it is an error reply and changes nothing.
--
-- State: hash KEY {s = the window's start, c = its count}.
-- Expiry: PEXPIRE to the window's end: a key without a current window
-- decides as a fresh one. Garbage collection only; the time is the caller's.

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

if #KEYS ~= 1 or #ARGV ~= 6 then
  return redis.error_reply(string.format('ERR fixed_window: takes 1 key and 6 arguments (now_us cost limit window_us count_rejected align), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, window = arg(3, 'limit', 1, MAX), arg(4, 'window_us', 1, MAX)
local count_rejected = arg(5, 'count_rejected', {'0', '1'})
local align = arg(6, 'align', {'epoch', 'first_hit'})
if not bad and now + window > MAX then
  bad = string.format('now_us + window_us must be below 2^53: now_us %d, window_us %d', now, window)
end
if bad then return redis.error_reply('ERR fixed_window: ' .. bad) end

local stored = redis.call('HMGET', KEYS[1], 's', 'c')
local start, count = nil, 0
if stored[1] then start, count = tonumber(stored[1]), tonumber(stored[2]) end

local opened = false
if align == 'epoch' then
  local current = idiv(now, window) * window
  -- A window later than now's (a clock ahead opened it) stays.
  if start == nil or start < current then start, count = current, 0 end
elseif start == nil or now >= start + window then
  start, count, opened = now, 0, true
end

local admit = count + cost <= limit
if count_rejected == '1' and count + cost > MAX then
  return redis.error_reply(string.format('ERR fixed_window: the window\'s count %d + cost %d must stay below 2^53', count, cost))
end
if admit or count_rejected == '1' then count = count + cost end
if admit or count_rejected == '1' or opened then
  redis.call('HSET', KEYS[1], 's', int(start), 'c', int(count))
  local fresh_in_us = start + window - now
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, idiv(fresh_in_us + 999, 1000))))
end
-- The RateLimit fields of the window as it is, at now.
local function fields()
  local reset = start + window - now
  if align == 'epoch' and count == 0 then reset = 0 end
  return math.max(0, limit - count), reset
end
if admit then return {1, 0, fields()} end
if cost > limit then return {0, -1, fields()} end
return {0, start + window - now, fields()}
