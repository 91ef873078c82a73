-- ratesim token_bucket: a token bucket, decided atomically in Redis.
--
-- Rule (ratesim DESIGN §2): the bucket starts full; tokens refill
-- continuously at rate = limit / window_us per microsecond, capped at
-- capacity; a request of `cost` is admitted iff tokens >= cost, which then
-- pays cost. A rejected request changes nothing.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us capacity
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected, the least whole
--          number of microseconds after which the same request would pass;
--          {0, -1} when it never can (cost > capacity).
--
-- Exact: integer arithmetic only. Tokens are kept multiplied by window_us,
-- so a refill of dt microseconds adds dt * limit exactly. Every
-- intermediate stays an exact integer below 2^53 when
--   now_us < 2^53,  (capacity + cost) * window_us + limit < 2^53.
-- (A microsecond Unix clock, 1.7e15 today, is within range for centuries.)
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

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local capacity = tonumber(ARGV[5])
if not (now and cost and limit and window and capacity)
    or now < 0 or cost < 1 or limit < 1 or window < 1 or capacity < 1 then
  return redis.error_reply('ERR token_bucket: now_us cost limit window_us capacity, whole numbers (now >= 0, others >= 1)')
end

local full, need = capacity * window, cost * window
if cost > capacity then return {0, -1} end

local stored = redis.call('HMGET', KEYS[1], 'b', 'l')
local balance, last = full, now
if stored[1] then balance, last = tonumber(stored[1]), tonumber(stored[2]) end
if now > last then
  -- Refill, without forming dt * limit when it would overflow the bucket.
  local dt = now - last
  if dt >= cdiv(full - balance, limit) then balance = full
  else balance = balance + dt * limit end
end

if balance < need then
  return {0, cdiv(need - balance, limit)}
end
balance = balance - need
redis.call('HSET', KEYS[1], 'b', int(balance), 'l', int(math.max(now, last)))
local fresh_in_us = cdiv(full - balance, limit)
redis.call('PEXPIRE', KEYS[1], int(math.max(1, cdiv(fresh_in_us, 1000))))
return {1, 0}
