-- ratesim leaky_bucket: nginx limit_req's shaper, decided atomically in Redis.
--
-- Rule (ratesim docs/semantics.md §2): requests leave at
-- rate = limit / window_us per microsecond. next_free starts at 0; a
-- request at now gets the slot release = max(now, next_free).
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
-- Arguments: whole numbers in ASCII digits (at most 16): now_us, queue and
--          delay from 0, the others from 1, each at most 2^53 - 1, and
--          jointly in the exact range below. Anything else ("1.5", "1e3",
--          "0x10", " 5", "", a negative or larger number, another count of
--          arguments) is an error reply "ERR leaky_bucket: <argument> ..."
--          naming what it got and what it takes, and the key is untouched.
-- Returns: {1, 0} admitted; {2, delay_us} delayed (the caller holds the
--          request that long, rounded up to whole microseconds);
--          {0, retry_after_us} rejected: the least whole number of
--          microseconds after which the same request would be accepted.
--          Then the RateLimit fields (docs/semantics.md §11) after this
--          decision, {outcome, wait_us, R, T}: R = remaining, -1 when a
--          request of any cost would pass at once now (the outlet is free,
--          or a place in the queue is free and its slot is within delay of
--          now: the cost never decides that; a gateway writes the policy
--          limit then), else 0; T = reset_us, the microseconds, rounded up,
--          until next_free (a fresh key's state; 0 when it is). A caller
--          that reads only the first two values is unaffected.
-- Clock behind: the state is next_free and the waiting slots, written by
--          the key's last accepted request, all later than its now_us and
--          never moved back. A caller whose now_us is behind that one's
--          finds them as written (the same slots wait, the same release);
--          its retry-after, or its delay to max(now_us, release - delay /
--          rate), runs to a moment on that shared timeline, counted on the
--          caller's own clock: the difference is added. (No time of the
--          last update is kept, so a request that delay lets through before
--          the writer's now_us passes at the caller's own now_us.)
--
-- Exact: times are whole microseconds u plus a fraction f / limit
-- (0 <= f < limit), so absolute times are never multiplied by the rate.
-- Every intermediate stays an exact integer below 2^53 when
--   now_us + (queue + 1) * cost * window_us / limit < 2^53,
--   (queue + 1) * cost * window_us + limit < 2^53,
--   delay * window_us + limit < 2^53
-- (cost being the largest cost of the key's requests).
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
  return redis.error_reply(string.format('ERR leaky_bucket: takes 1 key and 6 arguments (now_us cost limit window_us queue delay), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, window = arg(3, 'limit', 1, MAX), arg(4, 'window_us', 1, MAX)
local queue, delay = arg(5, 'queue', 0, MAX), arg(6, 'delay', 0, MAX)
if not bad and (queue + 1) * cost * window + limit > MAX then
  bad = string.format('(queue + 1) * cost * window_us + limit must be below 2^53: queue %d, cost %d, window_us %d, limit %d', queue, cost, window, limit)
elseif not bad and now + idiv((queue + 1) * cost * window, limit) > MAX then
  bad = string.format('now_us + (queue + 1) * cost * window_us / limit must be below 2^53: now_us %d, queue %d, cost %d, window_us %d, limit %d', now, queue, cost, window, limit)
elseif not bad and delay * window + limit > MAX then
  bad = string.format('delay * window_us + limit must be below 2^53: delay %d, window_us %d, limit %d', delay, window, limit)
end
if bad then return redis.error_reply('ERR leaky_bucket: ' .. bad) end

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

-- The RateLimit fields of the state as it is, at now.
local function fields()
  if by_now(nu, nf) then return -1, 0 end
  local remaining = 0
  if #waiting < queue and by_now(sub(nu, nf, delay)) then remaining = -1 end
  return remaining, until_us(nu, nf)
end

if by_now(nu, nf) then
  -- The outlet is free: pass now.
  waiting = {}
  nu, nf = add(now, 0, cost)
  save()
  return {1, 0, fields()}
end

local ru, rf = nu, nf -- release = next_free > now
if #waiting >= queue then
  local at
  if queue == 0 then at = {nu, nf} else at = waiting[#waiting - queue + 1] end
  return {0, math.max(1, until_us(at[1], at[2])), fields()}
end

local pu, pf = sub(ru, rf, delay)
waiting[#waiting + 1] = {ru, rf}
nu, nf = add(ru, rf, cost)
save()
if by_now(pu, pf) then return {1, 0, fields()} end
return {2, until_us(pu, pf), fields()}
