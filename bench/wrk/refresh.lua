-- POST /api/auth/refresh, each request with a refresh token never used before: the tokens start
-- as the file's (one per line, the refresh cookie's value) and every 200 gives back its
-- successor, which goes to the back of the queue. As many tokens stay in play as the file held,
-- whatever order the connections answer in; the file holds more than there are connections, so
-- a token is never asked for while it is still in flight. Each request comes from its own
-- X-Forwarded-For address (believed: the bench daemon trusts 127.0.0.1 as its proxy), so the
-- per-address refresh limit keeps its production value and is never what is measured.
-- args: tokens-file cookie-name
dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'report.lua')

local queue = {}
local head = 1
local tail = 0
local name = '__Host-authd_rt'
local pattern
local addr = 0
local t = 0

function init(args)
  name = args[2] or name
  pattern = name:gsub('%W', '%%%0') .. '=([^;]+)'
  for line in io.lines(args[1]) do
    if line ~= '' then
      tail = tail + 1
      queue[tail] = line
    end
  end
  math.randomseed(os.time())
  t = math.random(200)
end

function request()
  addr = addr % 4064 + 1
  local headers = {
    ['Content-Type'] = 'application/json',
    ['X-Forwarded-For'] = string.format('10.%d.%d.%d', t, math.floor(addr / 254), addr % 254 + 1),
  }
  -- an empty queue (only if answers were not 200s) sends no cookie: a 401, counted as an error
  if head <= tail then
    headers['Cookie'] = name .. '=' .. queue[head]
    queue[head] = nil
    head = head + 1
  end
  return wrk.format('POST', '/api/auth/refresh', headers, '{}')
end

function response(status, headers, body)
  if status ~= 200 then return end
  for k, v in pairs(headers) do
    if k:lower() == 'set-cookie' then
      local token = v:match(pattern)
      if token ~= nil then
        tail = tail + 1
        queue[tail] = token
        return
      end
    end
  end
end
