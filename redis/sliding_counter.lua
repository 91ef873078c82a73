-- ratesim sliding_counter: the sliding-window estimate, decided atomically.
--
-- Rule (ratesim DESIGN §2 and §5): windows [k * W, (k + 1) * W) from 0,
-- W = window_us. At now = k * W + e, p is the count of window k - 1 and c
-- the count of window k. A request of `cost` is admitted iff
--   weight = exact:  p * (W - e) + (c + cost) * W <= limit * W
--                    (Cloudflare's estimator, in exact integers)
--   weight = floor:  floor(p * (W - e) / W) + c + cost <= limit
--                    (Python limits' SlidingWindowCounter; admits more)
-- and then c += cost; with count_rejected = 1 rejected cost adds to c too.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us count_rejected weight
--          (count_rejected 0 or 1; weight "exact" or "floor")
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: the inequality
--          solved for e, later in this window or else in the next (where
--          this window's count is p), a rejected request counted first;
--          {0, -1} when it never can pass (cost > limit).
--
-- Exact: the product p * (W - e) is formed in two 26-bit limbs, so every
-- intermediate stays an exact integer below 2^53 when
--   now_us + 2 * W < 2^53,  W < 2^52,  (limit + 1) * W < 2^53,  counts < 2^52.
--
-- State: hash KEY {k = window index, p, c}.
-- Expiry: PEXPIRE to the end of window k + 1, when neither count matters
-- and the key decides as a fresh one. Garbage collection only; the time is
-- the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b) return idiv(a + b - 1, b) end

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

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, W = tonumber(ARGV[3]), tonumber(ARGV[4])
local count_rejected, weight = ARGV[5], ARGV[6]
if not (now and cost and limit and W)
    or now < 0 or cost < 1 or limit < 1 or W < 1
    or (count_rejected ~= '0' and count_rejected ~= '1')
    or (weight ~= 'exact' and weight ~= 'floor') then
  return redis.error_reply('ERR sliding_counter: now_us cost limit window_us count_rejected(0|1) weight(exact|floor)')
end

local k = idiv(now, W)
local e = now - k * W
local stored = redis.call('HMGET', KEYS[1], 'k', 'p', 'c')
local p, c = 0, 0
if stored[1] then
  local sk = tonumber(stored[1])
  if sk == k then p, c = tonumber(stored[2]), tonumber(stored[3])
  elseif sk + 1 == k then p = tonumber(stored[3]) end
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
if admit or count_rejected == '1' then
  c = c + cost
  redis.call('HSET', KEYS[1], 'k', int(k), 'p', int(p), 'c', int(c))
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, cdiv((k + 2) * W - now, 1000))))
end
if admit then return {1, 0} end
if cost > limit then return {0, -1} end

local at = earliest(p, c)
if at ~= nil and at > e then return {0, at - e} end
at = earliest(c, 0)
if at == nil then at = W end
return {0, W - e + at}
