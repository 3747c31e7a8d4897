-- POST /api/auth/login with the right password, spread over the bench's login users and each
-- request from a different client address (X-Forwarded-For, believed because the bench daemon
-- trusts 127.0.0.1 as its proxy): the login limits keep their production values and are never
-- what is measured (per_email counts an attempt until its hash says it succeeded, so one
-- account under 32 concurrent logins would be limited, as it should be).
-- args: password users
dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'report.lua')

local reqs = {}
local n = 0
local i = 0

function init(args)
  local users = tonumber(args[2])
  math.randomseed(os.time())
  local t = math.random(200)
  for a = 0, 15 do
    for b = 1, 254 do
      n = n + 1
      local body = string.format('{"email":"bench-login-%d@bench.test","password":"%s"}', n % users, args[1])
      reqs[n] = wrk.format('POST', '/api/auth/login', {
        ['Content-Type'] = 'application/json',
        ['X-Forwarded-For'] = string.format('10.%d.%d.%d', t, a, b),
      }, body)
    end
  end
end

function request()
  i = i % n + 1
  return reqs[i]
end
