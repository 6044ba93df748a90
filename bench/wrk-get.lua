-- wrk script for the get scenario of bench/load: GET /api/users/<id> with a
-- random id in 1..BENCH_USERS (default 10000). Use: wrk -s bench/wrk-get.lua URL
local users = tonumber(os.getenv("BENCH_USERS") or "10000")

function init(args)
	-- Each wrk thread has its own Lua state; seed each differently.
	math.randomseed(os.time() + tonumber(tostring({}):match("(%x%x%x%x%x%x)$") or "0", 16))
end

function request()
	return wrk.format("GET", "/api/users/" .. math.random(users))
end
