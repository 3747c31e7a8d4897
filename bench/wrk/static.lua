-- One request repeated (headers come from -H). args: method [body]
dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'report.lua')

function init(args)
  wrk.method = args[1] or 'GET'
  if args[2] ~= nil and args[2] ~= '' then
    wrk.body = args[2]
    wrk.headers['Content-Type'] = 'application/json'
  end
end
