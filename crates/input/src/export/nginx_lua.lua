    # The Redis server (host, then port). Set here, or set both variables
    # in the server { } block and delete these two lines.
    set $ratesim_redis_host "@HOST@";
    set $ratesim_redis_port "@PORT@";

    access_by_lua_block {
        local NAME = @NAME@ -- RateLimit's "NAME", as a structured-field string
        local POLICY = @POLICY@ -- RateLimit-Policy's value
        local Q = @Q@ -- the policy's q: r when any cost passes
        local FAIL = "@FAIL@" -- what a Redis that does not answer means
        local TIMEOUT_MS = @TIMEOUT@ -- per socket step: connect, send, each read
        local KEY = @KEY@ -- the key's value in this request
        local CALL = {@ARGS@} -- limit, window_us, extras (docs/semantics.md §6)
        local SHA = "@SHA@"
        local SCRIPT = @SCRIPT@

        -- A request whose key is empty is not counted (as nginx's limit_req
        -- skips a zone whose key is empty): it carries no fields.
        if KEY == nil or KEY == "" then return end
        local redis_key = @PREFIX@ .. KEY
        -- now_us: the request's start (ngx.req.start_time(), seconds with
        -- millisecond resolution; nginx's $msec - $request_time) in whole
        -- microseconds, so the script's clock is whole milliseconds and a
        -- replay of the access log sees the same arrivals.
        local now_us = math.floor(ngx.req.start_time() * 1000 + 0.5) * 1000

        local function int(x) return string.format("%.0f", x) end

        -- RESP over a cosocket: one command out, one reply back. A Redis
        -- error reply is (nil, message); a socket error is (nil, message, true).
        local function read(sock)
            local line, err = sock:receive("*l")
            if not line then return nil, err, true end
            local kind, rest = line:sub(1, 1), line:sub(2)
            if kind == ":" then return tonumber(rest) end
            if kind == "+" then return rest end
            if kind == "-" then return nil, rest end
            if kind == "$" then
                local n = tonumber(rest)
                if n < 0 then return false end
                local data, derr = sock:receive(n + 2)
                if not data then return nil, derr, true end
                return data:sub(1, n)
            end
            if kind == "*" then
                local list = {}
                for i = 1, tonumber(rest) do
                    local v, verr, broken = read(sock)
                    if v == nil then return nil, verr, broken end
                    list[i] = v
                end
                return list
            end
            return nil, "unexpected reply " .. line, true
        end
        local function command(sock, words)
            local out = {"*" .. #words .. "\r\n"}
            for _, w in ipairs(words) do
                w = type(w) == "number" and int(w) or w
                out[#out + 1] = "$" .. #w .. "\r\n" .. w .. "\r\n"
            end
            local ok, err = sock:send(table.concat(out))
            if not ok then return nil, err, true end
            return read(sock)
        end

        -- The script on Redis: EVALSHA, and on NOSCRIPT, SCRIPT LOAD and
        -- again. Returns its reply {outcome, wait_us, remaining, reset_us},
        -- or nil and why.
        local function remote()
            local sock = ngx.socket.tcp()
            sock:settimeouts(TIMEOUT_MS, TIMEOUT_MS, TIMEOUT_MS)
            local ok, err = sock:connect(ngx.var.ratesim_redis_host,
                tonumber(ngx.var.ratesim_redis_port))
            if not ok then return nil, "connect: " .. err end
            local words = {"EVALSHA", SHA, "1", redis_key, now_us, 1}
            for _, a in ipairs(CALL) do words[#words + 1] = a end
            local reply, rerr, broken = command(sock, words)
            if reply == nil and not broken and rerr:sub(1, 8) == "NOSCRIPT" then
                reply, rerr, broken = command(sock, {"SCRIPT", "LOAD", SCRIPT})
                if reply ~= nil then reply, rerr, broken = command(sock, words) end
            end
            if type(reply) ~= "table" or #reply < 4 then
                sock:close()
                return nil, rerr or "a reply of no four values"
            end
            sock:setkeepalive(60000, 32)
            return reply
        end
@FALLBACK@
        local reply, why = remote()
        local fields = {policy = POLICY}
        ngx.ctx.ratesim = fields
        if not reply then
            ngx.log(ngx.WARN, "ratesim ", NAME, ": Redis did not answer (", why, "): ", FAIL)
            if FAIL == "fail_open" then return end
            if FAIL == "fail_closed" then
                ngx.header["RateLimit-Policy"] = POLICY
                return ngx.exit(503)
            end
            reply, why = fallback(redis_key, now_us)
            if not reply then
                ngx.log(ngx.ERR, "ratesim ", NAME, ": the local fallback failed: ", why)
                return
            end
        end
        local outcome, wait, remaining, reset = reply[1], reply[2], reply[3], reply[4]
        if remaining < 0 then remaining = Q end
        fields.ratelimit = string.format("%s;r=%s;t=%s", NAME, int(remaining),
            int(math.ceil(reset / 1000000)))
        if outcome == 0 then
            ngx.header["RateLimit"] = fields.ratelimit
            ngx.header["RateLimit-Policy"] = POLICY
            if wait >= 0 then ngx.header["Retry-After"] = int(math.ceil(wait / 1000000)) end
            return ngx.exit(429)
        end
        -- ngx.sleep counts whole milliseconds: round the delay up to one.
        if outcome == 2 then ngx.sleep(math.ceil(wait / 1000) / 1000) end
    }

    # Every response of a counted request carries the fields: passes,
    # delays and rejections (the access phase above set them).
    header_filter_by_lua_block {
        local fields = ngx.ctx.ratesim
        if fields then
            ngx.header["RateLimit-Policy"] = fields.policy
            if fields.ratelimit then ngx.header["RateLimit"] = fields.ratelimit end
        end
    }
