/**
 * jsonwebtoken is a sixth of authd's start-up: authd loads it once it listens (after its
 * listening line), and before it reads any request, so no request waits for it. A --require hook
 * in the child records whether jsonwebtoken's modules are loaded when the server starts listening
 * and when its first request comes in.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { call } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'

const HOOK = `
const Module = require('node:module')
const http = require('node:http')
const fs = require('node:fs')
const loaded = () => Object.keys(Module._cache).some((k) => k.includes('/node_modules/jsonwebtoken/'))
const seen = {}
const emit = http.Server.prototype.emit
http.Server.prototype.emit = function (name, ...args) {
  if ((name === 'listening' || name === 'request') && !(name in seen)) {
    seen[name] = loaded()
    fs.writeFileSync(process.env.JWT_LOAD_LOG, JSON.stringify(seen))
  }
  return emit.call(this, name, ...args)
}
`

t.test('authd loads jsonwebtoken after it listens and before it reads the first request', async (t) => {
  const dir = t.testdir()
  const hook = join(dir, 'hook.cjs')
  const log = join(dir, 'jwt-load.json')
  writeFileSync(hook, HOOK)
  const data = join(dir, 'data')
  mkdirSync(data)
  const d = await spawnDaemon(t, data, { env: { NODE_OPTIONS: `--require ${hook}`, JWT_LOAD_LOG: log } })
  t.equal((await call(d.url, 'GET', '/healthz')).status, 200)
  t.same(JSON.parse(readFileSync(log, 'utf8')), { listening: false, request: true }, 'not loaded when listening; loaded by the first request (which needs no token)')
  t.equal(await d.stop(), 0)
})
