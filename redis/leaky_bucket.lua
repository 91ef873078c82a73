-- ratesim leaky_bucket: nginx limit_req's shaper, decided atomically in Redis.
--
-- Rule (ratesim DESIGN §2): requests leave at rate = limit / window_us per
-- microsecond. next_free starts at 0; a request at now gets the slot
-- release = max(now, next_free).
--   release = now                      -> admitted
--   waiting >= queue                   -> rejected (waiting: accepted
--                                         requests whose slot is > now)
--   otherwise accepted, and it passes at max(now, release - delay / rate):
--   admitted if that is now, else delayed by the difference.
-- Every accepted request sets next_free = release + cost / rate.
-- queue = 0 is a pure policer; delay = queue is nginx's nodelay
-- (nginx: burst = queue, delay= = delay). This is the exact rule; nginx
-- itself rounds to whole milliseconds (ratesim's arithmetic = "nginx").
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us queue delay
-- Returns: {1, 0} admitted; {2, delay_us} delayed (the caller holds the
--          request that long, rounded up to whole microseconds);
--          {0, retry_after_us} rejected: the least whole number of
--          microseconds after which the same request would be accepted.
--
-- Exact: times are whole microseconds u plus a fraction f / limit
-- (0 <= f < limit), so absolute times are never multiplied by the rate.
-- Every intermediate stays an exact integer below 2^53 when
--   now_us + (queue + 1) * cost * window_us / limit < 2^53,
--   (queue + 1) * cost * window_us + limit < 2^53.
--
-- State: hash KEY {n = next_free as "u f", q = the waiting slots, oldest
-- first, "u f u f ..."} — at most queue of them.
-- Expiry: PEXPIRE to next_free: from then on nothing waits and the key
-- decides as a fresh one. Garbage collection only; the time is the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local queue, delay = tonumber(ARGV[5]), tonumber(ARGV[6])
if not (now and cost and limit and window and queue and delay)
    or now < 0 or cost < 1 or limit < 1 or window < 1 or queue < 0 or delay < 0 then
  return redis.error_reply('ERR leaky_bucket: now_us cost limit window_us queue delay, whole numbers (now, queue, delay >= 0, others >= 1)')
end

-- Time pairs {u, f}: u + f / limit microseconds.
local function add(u, f, tokens)
  local scaled = tokens * window
  local du = idiv(scaled, limit)
  u, f = u + du, f + scaled - du * limit
  if f >= limit then u, f = u + 1, f - limit end
  return u, f
end
local function sub(u, f, tokens)
  local scaled = tokens * window
  local du = idiv(scaled, limit)
  u, f = u - du, f - (scaled - du * limit)
  if f < 0 then u, f = u - 1, f + limit end
  return u, f
end
-- a <= now
local function by_now(u, f) return u < now or (u == now and f == 0) end
-- Whole microseconds from now until {u, f} (> now), rounded up.
local function until_us(u, f) return u - now + (f > 0 and 1 or 0) end

local stored = redis.call('HMGET', KEYS[1], 'n', 'q')
local nu, nf = 0, 0
local waiting = {}
if stored[1] then
  local a, b = string.match(stored[1], '^(%d+) (%d+)$')
  nu, nf = tonumber(a), tonumber(b)
  if stored[2] then
    for u, f in string.gmatch(stored[2], '(%d+) (%d+)') do
      u, f = tonumber(u), tonumber(f)
      if not by_now(u, f) then waiting[#waiting + 1] = {u, f} end
    end
  end
end

local function save()
  local q = {}
  for i, slot in ipairs(waiting) do q[i] = int(slot[1]) .. ' ' .. int(slot[2]) end
  redis.call('HSET', KEYS[1], 'n', int(nu) .. ' ' .. int(nf), 'q', table.concat(q, ' '))
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, idiv(until_us(nu, nf) + 999, 1000))))
end

if by_now(nu, nf) then
  -- The outlet is free: pass now.
  waiting = {}
  nu, nf = add(now, 0, cost)
  save()
  return {1, 0}
end

local ru, rf = nu, nf -- release = next_free > now
if #waiting >= queue then
  local at
  if queue == 0 then at = {nu, nf} else at = waiting[#waiting - queue + 1] end
  return {0, math.max(1, until_us(at[1], at[2]))}
end

local pu, pf = sub(ru, rf, delay)
waiting[#waiting + 1] = {ru, rf}
nu, nf = add(ru, rf, cost)
save()
if by_now(pu, pf) then return {1, 0} end
return {2, until_us(pu, pf)}
