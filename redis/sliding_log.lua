-- ratesim sliding_log: a log of timestamps in a sorted set, decided atomically.
--
-- Rule (ratesim docs/semantics.md §2 and §5): the log holds (time, cost)
-- entries. An entry at s is live at now iff
--   boundary = exclusive:  s > now - window_us   (it expires at s + window_us)
--   boundary = inclusive:  s >= now - window_us  (Python limits' MovingWindow;
--                                                 it expires 1 us later)
-- A request of `cost` is admitted iff live cost + cost <= limit, and is then
-- appended; with count_rejected = 1 rejected requests are appended too
-- (the common "ZADD first" limiter).
--
-- Call:    EVALSHA sha 1 KEY now_us cost limit window_us count_rejected boundary
-- Arguments: now_us, cost, limit and window_us whole numbers in ASCII digits
--          (at most 16): now_us from 0, the others from 1, each at most
--          2^53 - 1, and jointly in the exact range below; count_rejected 0
--          or 1; boundary "exclusive" or "inclusive". Anything else ("1.5",
--          "1e3", "0x10", " 5", "", a negative or larger number, another
--          word or count of arguments) is an error reply "ERR sliding_log:
--          <argument> ..." naming what it got and what it takes, and the
--          key is untouched.
-- Returns: {1, 0} admitted; {0, retry_after_us} rejected: until enough of
--          the oldest entries expire (a rejected request counted first);
--          {0, -1} when it never can pass (cost > limit).
--          Then the RateLimit fields (docs/semantics.md §11) after this
--          decision, {outcome, wait_us, R, T}: R = remaining, limit less the
--          live cost (at least 0); T = reset_us, the microseconds until the
--          newest entry expires (a fresh key's state; 0 with none live).
--          A caller that reads only the first two values is unaffected.
-- Clock behind: a caller whose now_us is behind the log's newest entry (m,
--          written by a gateway whose clock is ahead) is decided at m: the
--          entries live at m count, its own entry is written at m (no entry
--          goes back in time), and its retry-after runs to the moment an
--          entry expires, counted on the caller's own clock: m - now_us is
--          added.
--
-- Exact: whole numbers only; every intermediate stays below 2^53 when
--   now_us + window_us + 1 < 2^53 and the live cost < 2^53 (with
--   count_rejected, a request that would log past it is an error reply and
--   changes nothing).
--
-- State: sorted set KEY, one member per entry, score = its time in us,
-- member "cost:time:n" (n tells apart entries of the same time). Memory
-- grows with the live entries: at most `limit` of them without
-- count_rejected. Expired entries are removed when a request is logged; a
-- request that is not logged writes nothing.
-- Expiry: PEXPIRE to when the newest entry expires, when the log is empty
-- as a fresh key's. Garbage collection only; the time is the caller's.

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
  return redis.error_reply(string.format('ERR sliding_log: takes 1 key and 6 arguments (now_us cost limit window_us count_rejected boundary), got %d and %d', #KEYS, #ARGV))
end
local now, cost = arg(1, 'now_us', 0, MAX), arg(2, 'cost', 1, MAX)
local limit, window = arg(3, 'limit', 1, MAX), arg(4, 'window_us', 1, MAX)
local count_rejected = arg(5, 'count_rejected', {'0', '1'})
local boundary = arg(6, 'boundary', {'exclusive', 'inclusive'})
if not bad and now + window + 1 > MAX then
  bad = string.format('now_us + window_us + 1 must be below 2^53: now_us %d, window_us %d', now, window)
end
if bad then return redis.error_reply('ERR sliding_log: ' .. bad) end

-- An entry at s lives until s + life (exclusive of that moment).
local life = window
if boundary == 'inclusive' then life = window + 1 end

-- The log, oldest first. Decided at t = max(now, its newest entry's time).
local log = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local t = now
if #log > 0 then t = math.max(now, tonumber(log[#log])) end
local entries, live = {}, 0 -- the entries live at t, {cost, time}
for i = 1, #log, 2 do
  local at = tonumber(log[i + 1])
  if at + life > t then
    entries[#entries + 1] = {tonumber(string.match(log[i], '^(%d+):')), at}
    live = live + entries[#entries][1]
  end
end

local admit = live + cost <= limit
if admit or count_rejected == '1' then
  if live + cost > MAX then
    return redis.error_reply(string.format('ERR sliding_log: the live cost %d + cost %d must stay below 2^53', live, cost))
  end
  -- Forget what has expired at t (s + life <= t), and log this one at t.
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', int(t - life))
  local n = redis.call('ZCOUNT', KEYS[1], int(t), int(t))
  redis.call('ZADD', KEYS[1], int(t), int(cost) .. ':' .. int(t) .. ':' .. int(n))
  redis.call('PEXPIRE', KEYS[1], int(math.max(1, idiv(t + life - now + 999, 1000))))
  live = live + cost
  entries[#entries + 1] = {cost, t}
end
-- The RateLimit fields of the log as it is, at t (now, for a caller not
-- behind): entries are oldest first, so the last one expires last.
local function fields()
  local reset = 0
  if #entries > 0 then reset = math.max(0, entries[#entries][2] + life - now) end
  return math.max(0, limit - live), reset
end
if admit then return {1, 0, fields()} end
if cost > limit then return {0, -1, fields()} end

-- Passes once the oldest entries whose cost adds up to `excess` expired
-- (entries of one time expire together, so their order does not matter);
-- counted from now, so a caller behind waits the difference too.
local excess, freed = live + cost - limit, 0
for _, entry in ipairs(entries) do
  freed = freed + entry[1]
  if freed >= excess then return {0, entry[2] + life - now, fields()} end
end
return {0, -1, fields()}
