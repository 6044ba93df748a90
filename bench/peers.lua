-- wrk script of bench/peers.sh: one request shape, from the environment.
--
--   WRK_METHOD  GET, POST, PATCH... (GET)
--   WRK_PATH    the path and query (/)
--   WRK_BODY    the body, if any
--   WRK_IDS     how many ids ${id} draws from (10000)
--   WRK_PAGES   how many pages ${page} draws from (500)
--   WRK_TAG     what makes ${seq} unique across runs (the time)
--
-- In the path and body, ${id} is a random id in 1..WRK_IDS, ${pbid} the same
-- id as PocketBase's (u00000000000042), ${page} a random page in
-- 1..WRK_PAGES, ${age} a random age in 18..77, and ${seq} a value no other
-- request of any run has had. A shape without them is built once.
--
-- At the end it prints one line of key=value fields for peers.sh: requests,
-- duration and latency percentiles in microseconds, and the error counts.
local method = os.getenv("WRK_METHOD") or "GET"
local path = os.getenv("WRK_PATH") or "/"
local body = os.getenv("WRK_BODY")
if body == "" then body = nil end
local ids = tonumber(os.getenv("WRK_IDS") or "10000")
local pages = tonumber(os.getenv("WRK_PAGES") or "500")
local tag = os.getenv("WRK_TAG") or tostring(os.time())
local n = 0

local function dynamic(s)
	return s ~= nil and s:find("${", 1, true) ~= nil
end

local function fill(s, id)
	return (s:gsub("%${(%w+)}", function(k)
		if k == "id" then return tostring(id) end
		if k == "pbid" then return string.format("u%014d", id) end
		if k == "page" then return tostring(math.random(pages)) end
		if k == "age" then return tostring(17 + math.random(60)) end
		if k == "seq" then n = n + 1; return tag .. "-" .. n end
		return nil
	end))
end

function init(args)
	-- Each thread has its own Lua state: seed each differently.
	math.randomseed(os.time() + tonumber(tostring({}):match("(%x%x%x%x%x%x)$") or "0", 16))
end

wrk.method = method
wrk.path = path
wrk.body = body

if dynamic(path) or dynamic(body) then
	function request()
		local id = math.random(ids)
		local b = nil
		if body ~= nil then b = fill(body, id) end
		return wrk.format(nil, fill(path, id), nil, b)
	end
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
		"WRK requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d status=%d connect=%d read=%d write=%d timeout=%d\n",
		summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
		e.status, e.connect, e.read, e.write, e.timeout))
end
