-- ratesim sliding_counter: the sliding-window estimate, decided atomically.
--
-- Rule (ratesim docs/semantics.md §2 and §5): windows [k * W, (k + 1) * W)
-- from 0, W = window_us. At now = k * W + e, p is the count of window k - 1
-- and c the count of window k. A request of `cost` is admitted iff
--   weight = exact:  p * (W - e) + (c + cost) * W <= limit * W
--                    (Cloudflare's estimator, in exact integers)
--   weight = floor:  floor(p * (W - e) / W) + c + cost <= limit
--                    (Python limits' SlidingWindowCounter; admits more)
-- and then c += cost; with count_rejected = 1 rejected cost adds to c too.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us count_rejected weight
-- Arguments: now_us, cost, limit and window_us whole numbers in ASCII digits
--          (at most 16): now_us from 0, the others from 1; now_us and cost
--          at most 2^53 - 1, limit and window_us at most 2^52 - 1, and all
--          jointly in the exact range below; count_rejected 0 or 1; weight
--          "exact" or "floor". Anything else ("1.5", "1e3", "0x10", " 5",
--          "", a negative or larger number, another word or count of
--          arguments) is an error reply "ERR sliding_counter: <argument> ..."
--          naming what it got and what it takes, and the key is untouched.
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: the inequality
--          solved for e, later in this window or else in the next (where
--          this window's count is p), a rejected request counted first;
--          {0, -1} when it never can pass (cost > limit).
--          Then the RateLimit fields (docs/semantics.md §11) after this
--          decision, {outcome, wait_us, R, T}: R = remaining,
--          limit - c - ceil(p * (W - e) / W) (floor: with floor(...)), at
--          least 0; T = reset_us, the microseconds until neither count
--          weighs (a fresh key's state; 0 when it is). A caller that reads
--          only the first two values is unaffected.
-- Clock behind: a caller whose now_us falls before the key's window k
--          (written by a gateway whose clock is ahead) is decided at that
--          window's start, k * W (e = 0): the window never moves back, and
--          the retry-after adds k * W - now_us, counted on the caller's own
--          clock. (Within window k a caller is decided at its own e: the
--          script keeps no time finer than the window.)
--
-- Exact: the product p * (W - e) is formed in two 26-bit limbs, so every
-- intermediate stays an exact integer below 2^53 when
--   now_us + 2 * W < 2^53,  W < 2^52,  (limit + 1) * W < 2^53,
--   limit < 2^52,  and with count_rejected a window's count < 2^52 (a
--   request that would count past it is an error reply and changes
--   nothing).
--
-- State: hash KEY {k = window index, p, c}.
-- Expiry: PEXPIRE to when window k's count c stops weighing, and with it
-- the previous one, so that the key decides as a fresh one: exact, the end
-- of window k + 1; floor, the offset of window k + 1 from which
-- floor(c * (W - e) / W) = 0, W - floor((W - 1) / c). Garbage collection
-- only; the time is the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b) return idiv(a - 1, b) + 1 end

-- a * b for 0 <= a, b < 2^52, exactly, as hi * 2^52 + lo.
local L = 67108864 -- 2^26
local function mul(a, b)
  local a1, b1 = idiv(a, L), idiv(b, L)
  local a0, b0 = a - a1 * L, b - b1 * L
  local mid = a1 * b0 + a0 * b1
  local mid1 = idiv(mid, L)
  local lo = a0 * b0 + (mid - mid1 * L) * L
  local carry = idiv(lo, L * L)
  return a1 * b1 + mid1 + carry, lo - carry * L * L
end
-- a * b <= x, for x < 2^53.
local function product_at_most(a, b, x)
  local hi, lo = mul(a, b)
  if hi >= 2 then return false end -- at least 2^53 > x
  return hi * L * L + lo <= x        -- below 2^53: exact
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
  return redis.error_reply(string.format('ERR sliding_counter: takes 1 key and 6 arguments (now_us cost limit window_us count_rejected weight), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, W = arg(3, 'limit', 1, L * L - 1), arg(4, 'window_us', 1, L * L - 1)
local count_rejected = arg(5, 'count_rejected', {'0', '1'})
local weight = arg(6, 'weight', {'exact', 'floor'})
if not bad and now + 2 * W > MAX then
  bad = string.format('now_us + 2 * window_us must be below 2^53: now_us %d, window_us %d', now, W)
elseif not bad and (limit + 1) * W > MAX then
  bad = string.format('(limit + 1) * window_us must be below 2^53: limit %d, window_us %d', limit, W)
end
if bad then return redis.error_reply('ERR sliding_counter: ' .. bad) end

local stored = redis.call('HMGET', KEYS[1], 'k', 'p', 'c')
-- Decided at t = max(now, the start of the key's window).
local t = now
if stored[1] then t = math.max(now, tonumber(stored[1]) * W) end
local k = idiv(t, W)
local e = t - k * W
local p, c = 0, 0
if stored[1] then
  local sk = tonumber(stored[1])
  if sk == k then p, c = tonumber(stored[2]), tonumber(stored[3])
  elseif sk + 1 == k then p = tonumber(stored[3]) end
end

-- A count n of window j weighs in window j + 1 until: exact, its end;
-- floor, the offset from which floor(n * (W - e) / W) = 0.
local function stops(j, n)
  if weight == 'exact' then return (j + 2) * W end
  return (j + 1) * W + W - idiv(W - 1, n)
end

-- Whether a request of `cost` fits at offset e with counts prev, cur.
local function fits(prev, cur, at)
  local room = limit - cur - cost
  if room < 0 then return false end
  if weight == 'exact' then return product_at_most(prev, W - at, room * W) end
  return product_at_most(prev, W - at, (room + 1) * W - 1)
end

-- The least offset in [0, W) at which a request of `cost` fits with counts
-- prev, cur, or nil.
local function earliest(prev, cur)
  local room = limit - cur - cost
  if room < 0 then return nil end
  if prev == 0 then return 0 end
  local at
  if weight == 'exact' then
    at = W - idiv(room * W, prev)        -- prev * (W - at) <= room * W
  else
    at = W - cdiv((room + 1) * W, prev) + 1 -- prev * (W - at) < (room + 1) * W
  end
  at = math.max(at, 0)
  if at < W then return at end
  return nil
end

local admit = fits(p, c, e)
if count_rejected == '1' and c + cost >= L * L then
  return redis.error_reply(string.format('ERR sliding_counter: the window\'s count %d + cost %d must stay below 2^52', c, cost))
end
if admit or count_rejected == '1' then
  c = c + cost
  redis.call('HSET', KEYS[1], 'k', int(k), 'p', int(p), 'c', int(c))
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, cdiv(stops(k, c) - now, 1000))))
end
-- The RateLimit fields of the counts as they are, at t. The weighed
-- previous count p * (W - e) is formed only when it is at most limit * W
-- (below 2^53); beyond, it weighs at least limit and nothing passes.
local function fields()
  local remaining = 0
  if product_at_most(p, W - e, limit * W) then
    local weighed = p * (W - e)
    local weigh = idiv(weighed, W)
    if weight == 'exact' then weigh = cdiv(weighed, W) end
    remaining = math.max(0, limit - c - weigh)
  end
  local fresh = 0
  if c > 0 then fresh = stops(k, c) elseif p > 0 and k > 0 then fresh = stops(k - 1, p) end
  return remaining, math.max(0, fresh - now)
end
if admit then return {1, 0, fields()} end
if cost > limit then return {0, -1, fields()} end

local at = earliest(p, c)
-- Counted from now: a caller behind waits the difference too.
if at ~= nil and at > e then return {0, at - e + t - now, fields()} end
at = earliest(c, 0)
if at == nil then at = W end
return {0, W - e + at + t - now, fields()}
