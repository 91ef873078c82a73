
        -- local_fallback: the fallback limiter's own script (@FALLBACK_ALGORITHM@), run
        -- here on the shared dict "@DICT@" (the http { } block's
        -- lua_shared_dict) through the few Redis commands the scripts use,
        -- so this nginx decides by the same rule while Redis is away. One
        -- key's call holds a lock in the dict, so workers do not interleave.
        local FALLBACK_CALL = {@FALLBACK_ARGS@}
        local FALLBACK_SCRIPT = @FALLBACK_SCRIPT@
        local function fallback(key, now)
            local dict = ngx.shared["@DICT@"]
            if not dict then return nil, "no lua_shared_dict @DICT@ in the http block" end
            -- A stored value is "h" .. fields (a hash), "s" .. text (a
            -- string) or "z" .. members (a sorted set), a field or member
            -- per line.
            local function load(k)
                local v = dict:get(k)
                if not v then return nil, {} end
                local kind, body, items = v:sub(1, 1), v:sub(2), {}
                if kind == "s" then return "s", body end
                for a, b in body:gmatch("([^\t\n]*)\t([^\n]*)") do items[#items + 1] = {a, b} end
                return kind, items
            end
            local function store(k, kind, items)
                if kind == "s" then return dict:set(k, "s" .. items) end
                local lines = {}
                for i, it in ipairs(items) do lines[i] = it[1] .. "\t" .. it[2] .. "\n" end
                if #lines == 0 then return dict:delete(k) end
                return dict:set(k, kind .. table.concat(lines))
            end
            local function hash(k)
                local kind, items = load(k)
                local h = {}
                if kind == "h" then for _, it in ipairs(items) do h[it[1]] = it[2] end end
                return h
            end
            -- A sorted set: {score, member} by score, then member.
            local function zset(k)
                local kind, items = load(k)
                local z = {}
                if kind == "z" then for _, it in ipairs(items) do z[#z + 1] = {tonumber(it[1]), it[2]} end end
                return z
            end
            local function zstore(k, z)
                table.sort(z, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
                local items = {}
                for i, e in ipairs(z) do items[i] = {string.format("%.0f", e[1]), e[2]} end
                return store(k, "z", items)
            end
            local function bound(x) return x == "-inf" and -math.huge or tonumber(x) end
            local commands = {
                HMGET = function(k, ...)
                    local h, out = hash(k), {}
                    for i, f in ipairs({...}) do out[i] = h[f] or false end
                    return out
                end,
                HSET = function(k, ...)
                    local kind, items = load(k)
                    if kind ~= "h" then items = {} end
                    local args = {...}
                    for i = 1, #args, 2 do
                        local found = false
                        for _, it in ipairs(items) do
                            if it[1] == args[i] then it[2], found = args[i + 1], true end
                        end
                        if not found then items[#items + 1] = {args[i], args[i + 1]} end
                    end
                    store(k, "h", items)
                    return 0
                end,
                PEXPIRE = function(k, ms) dict:expire(k, tonumber(ms) / 1000) return 1 end,
                GET = function(k)
                    local kind, v = load(k)
                    if kind == "s" then return v end
                    return false
                end,
                SET = function(k, v, px, ms)
                    dict:set(k, "s" .. v, px and tonumber(ms) / 1000 or 0)
                    return "OK"
                end,
                ZRANGE = function(k)
                    local out = {}
                    for _, e in ipairs(zset(k)) do
                        out[#out + 1] = e[2]
                        out[#out + 1] = string.format("%.0f", e[1])
                    end
                    return out
                end,
                ZREMRANGEBYSCORE = function(k, lo, hi)
                    local kept, z = {}, zset(k)
                    for _, e in ipairs(z) do
                        if e[1] < bound(lo) or e[1] > bound(hi) then kept[#kept + 1] = e end
                    end
                    zstore(k, kept)
                    return #z - #kept
                end,
                ZCOUNT = function(k, lo, hi)
                    local n = 0
                    for _, e in ipairs(zset(k)) do
                        if e[1] >= bound(lo) and e[1] <= bound(hi) then n = n + 1 end
                    end
                    return n
                end,
                ZADD = function(k, score, member)
                    local z = zset(k)
                    z[#z + 1] = {tonumber(score), member}
                    zstore(k, z)
                    return 1
                end,
            }
            local shim = {
                call = function(name, ...)
                    local f = commands[name]
                    if not f then error("the local fallback has no " .. name) end
                    return f(...)
                end,
                error_reply = function(message) return {err = message} end,
            }
            shim.pcall = shim.call
            local chunk, err = loadstring(FALLBACK_SCRIPT, "=@FALLBACK_ALGORITHM@")
            if not chunk then return nil, err end
            local argv = {string.format("%.0f", now), "1"}
            for _, a in ipairs(FALLBACK_CALL) do argv[#argv + 1] = a end
            setfenv(chunk, setmetatable({redis = shim, KEYS = {key}, ARGV = argv},
                {__index = _G}))
            local lock = "lock\t" .. key
            for _ = 1, 100 do
                if dict:add(lock, true, 0.1) then break end
                ngx.sleep(0.001)
            end
            local ok, reply = pcall(chunk)
            dict:delete(lock)
            if not ok then return nil, reply end
            if type(reply) ~= "table" or reply.err then return nil, reply and reply.err end
            return reply
        end
