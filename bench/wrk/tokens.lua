-- GET /api/auth/me with a different access token on every request, from a file of tokens.
-- args: tokens-file
-- The requests are formatted once in init, so the load generator spends nothing per request.
dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'report.lua')

local reqs = {}
local n = 0
local i = 0

function init(args)
  for line in io.lines(args[1]) do
    if line ~= '' then
      n = n + 1
      reqs[n] = wrk.format('GET', '/api/auth/me', { ['Authorization'] = 'Bearer ' .. line })
    end
  end
  i = math.random(n) - 1
end

function request()
  i = i % n + 1
  return reqs[i]
end
