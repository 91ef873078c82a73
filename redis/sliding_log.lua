-- ratesim sliding_log: a log of timestamps in a sorted set, decided atomically.
--
-- Rule (ratesim DESIGN §2 and §5): the log holds (time, cost) entries. An
-- entry at s is live at now iff
--   boundary = exclusive:  s > now - window_us   (it expires at s + window_us)
--   boundary = inclusive:  s >= now - window_us  (Python limits' MovingWindow;
--                                                 it expires 1 us later)
-- A request of `cost` is admitted iff live cost + cost <= limit, and is then
-- appended; with count_rejected = 1 rejected requests are appended too
-- (the common "ZADD first" limiter).
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us count_rejected boundary
--          (count_rejected 0 or 1; boundary "exclusive" or "inclusive")
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: until enough of
--          the oldest entries expire (a rejected request counted first);
--          {0, -1} when it never can pass (cost > limit).
--
-- Exact: whole numbers only; every intermediate stays below 2^53 when
--   now_us + window_us + 1 < 2^53 and the live cost < 2^53.
--
-- State: sorted set KEY, one member per entry, score = its time in us,
-- member "cost:time:n" (n tells apart entries of the same time). Memory
-- grows with the live entries: at most `limit` of them without
-- count_rejected.
-- Expiry: PEXPIRE to when the newest entry expires, when the log is empty
-- as a fresh key's. Garbage collection only; the time is the caller's.

local function int(x) return string.format('%d', x) end

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

local now, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local count_rejected, boundary = ARGV[5], ARGV[6]
if not (now and cost and limit and window)
    or now < 0 or cost < 1 or limit < 1 or window < 1
    or (count_rejected ~= '0' and count_rejected ~= '1')
    or (boundary ~= 'exclusive' and boundary ~= 'inclusive') then
  return redis.error_reply('ERR sliding_log: now_us cost limit window_us count_rejected(0|1) boundary(exclusive|inclusive)')
end

-- An entry at s lives until s + life (exclusive of that moment).
local life = window
if boundary == 'inclusive' then life = window + 1 end
-- Forget what has expired: entries with s + life <= now.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', int(now - life))

local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local live = 0
for i = 1, #entries, 2 do
  live = live + tonumber(string.match(entries[i], '^(%d+):'))
end

local admit = live + cost <= limit
if admit or count_rejected == '1' then
  local n = redis.call('ZCOUNT', KEYS[1], int(now), int(now))
  redis.call('ZADD', KEYS[1], int(now), int(cost) .. ':' .. int(now) .. ':' .. int(n))
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, idiv(life + 999, 1000))))
  live = live + cost
  entries[#entries + 1] = int(cost) .. ':' .. int(now)
  entries[#entries + 1] = int(now)
end
if admit then return {1, 0} end
if cost > limit then return {0, -1} end

-- Passes once the oldest entries whose cost adds up to `excess` expired
-- (entries of one time expire together, so their order does not matter).
local excess, freed = live + cost - limit, 0
for i = 1, #entries, 2 do
  freed = freed + tonumber(string.match(entries[i], '^(%d+):'))
  if freed >= excess then
    return {0, tonumber(entries[i + 1]) + life - now}
  end
end
return {0, -1}
