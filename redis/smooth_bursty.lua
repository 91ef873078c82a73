-- ratesim smooth_bursty: Guava's RateLimiter (SmoothBursty), atomically in Redis.
--
-- Rule (ratesim DESIGN §5): a token balance T that may be negative (debt),
-- at a key's first request 0 (start = empty, as Guava) or capacity
-- (start = full). At now: T = min(capacity, T + rate * (now - last)), with
-- rate = limit / window_us per microsecond. A request is admitted iff
-- T >= 0 — whatever its cost, even above capacity — and then T -= cost: the
-- next caller pays. Guava's maxPermits = rate * maxBurstSeconds is capacity.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us capacity start
--          (start "empty" or "full")
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: the whole
--          microseconds, rounded up, until the debt is paid (-T / rate).
--
-- Exact: T is kept multiplied by window_us, so a refill of dt microseconds
-- adds dt * limit exactly. Every intermediate stays an exact integer below
-- 2^53 when
--   now_us < 2^53,  (capacity + cost) * window_us + limit < 2^53.
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

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local capacity, start = tonumber(ARGV[5]), ARGV[6]
if not (now and cost and limit and window and capacity)
    or now < 0 or cost < 1 or limit < 1 or window < 1 or capacity < 1
    or (start ~= 'empty' and start ~= 'full') then
  return redis.error_reply('ERR smooth_bursty: now_us cost limit window_us capacity start(empty|full), whole numbers (now >= 0, others >= 1)')
end

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

if balance < 0 then
  return {0, cdiv(-balance, limit)}
end
balance = balance - cost * window
redis.call('HSET', KEYS[1], 't', int(balance), 'l', int(last))
if start == 'full' then
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, cdiv(cdiv(full - balance, limit), 1000))))
end
return {1, 0}
