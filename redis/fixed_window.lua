-- ratesim fixed_window: a fixed-window counter, decided atomically in Redis.
--
-- Rule (ratesim DESIGN §2 and §5): a request of `cost` is admitted iff
-- count + cost <= limit in its window; admitted cost adds to the count, and
-- with count_rejected = 1 rejected cost does too.
--   align = epoch:     windows [k * window_us, (k + 1) * window_us) from 0.
--   align = first_hit: a key has no window until a request arrives; that
--     request opens [s, s + window_us) with count 0, whatever its outcome,
--     and a request at now >= s + window_us opens a new one at now
--     (Redis INCR + EXPIRE set on the first increment; Python limits'
--     FixedWindow with count_rejected = 1). envoyproxy/ratelimit is epoch
--     with count_rejected = 1.
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us count_rejected align
--          (count_rejected 0 or 1; align "epoch" or "first_hit")
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: until the window
--          ends; {0, -1} when the request never can pass (cost > limit).
--
-- Exact: whole numbers only; every intermediate stays below 2^53 when
--   now_us + window_us < 2^53 and the count (with count_rejected, the sum
--   of the costs of one window's requests) < 2^53.
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

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local count_rejected, align = ARGV[5], ARGV[6]
if not (now and cost and limit and window)
    or now < 0 or cost < 1 or limit < 1 or window < 1
    or (count_rejected ~= '0' and count_rejected ~= '1')
    or (align ~= 'epoch' and align ~= 'first_hit') then
  return redis.error_reply('ERR fixed_window: now_us cost limit window_us count_rejected(0|1) align(epoch|first_hit)')
end

local stored = redis.call('HMGET', KEYS[1], 's', 'c')
local start, count = nil, 0
if stored[1] then start, count = tonumber(stored[1]), tonumber(stored[2]) end

local opened = false
if align == 'epoch' then
  local current = idiv(now, window) * window
  if start ~= current then start, count = current, 0 end
elseif start == nil or now >= start + window then
  start, count, opened = now, 0, true
end

local admit = count + cost <= limit
if admit or count_rejected == '1' then count = count + cost end
if admit or count_rejected == '1' or opened then
  redis.call('HSET', KEYS[1], 's', int(start), 'c', int(count))
  local fresh_in_us = start + window - now
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, idiv(fresh_in_us + 999, 1000))))
end
if admit then return {1, 0} end
if cost > limit then return {0, -1} end
return {0, start + window - now}
