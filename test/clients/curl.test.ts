/**
 * The README's curl examples, run by bash exactly as written (the block between the
 * curl-examples markers), against the real `authd start --dev`. The block reads authd's address
 * from $AUTHD, as its first line documents; that is the only thing the test sets.
 */
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { call } from '../helpers/app.js'
import { spawnDaemon } from '../helpers/daemon.js'

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

function curlInstalled(): boolean {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Runs a bash script in `cwd` with `env`; resolves with stdout, stderr and the exit code. */
function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn('bash', ['-s'], { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    proc.stdin.end(script)
  })
}

/** curl -s prints bodies without a newline: split the concatenated JSON documents */
const documents = (text: string): unknown[] => text.split(/(?<=\})(?=\{"success")/).map((s) => JSON.parse(s) as unknown)

const skip = curlInstalled() ? false : 'curl is not installed (Debian: apt-get install curl); .ci/run installs it'

t.test("the README's curl examples run as written: log in, who am I, refresh, log out", { skip }, async (t) => {
  const block = /<!-- curl-examples:start -->\n```sh\n([\s\S]*?)```\n<!-- curl-examples:end -->/.exec(readme)
  t.ok(block, 'README has the curl examples block')
  const script = block![1]!
  t.match(script, /^AUTHD=\$\{AUTHD:-http:\/\/127\.0\.0\.1:8080\}/, 'its first line takes the address from $AUTHD, defaulting to the default listen address')

  const dir = t.testdir()
  const authd = await spawnDaemon(t, join(dir, 'data'), { args: ['--dev'] })
  // the user the examples log in as (the README's Quick start creates it the same way)
  const creds = /-d '(\{"email":"[^"]+","password":"[^"]+"\})'/.exec(script)
  t.ok(creds, 'the block logs in with literal credentials')
  const reg = await call(authd.url, 'POST', '/api/auth/register', { json: JSON.parse(creds![1]!) })
  t.equal(reg.status, 201, 'that user can be registered (valid email, acceptable password)')

  // the block as written, then one line to hand its TOKEN back for the checks below
  const r = await bash(`${script}\nprintf '\\nTOKEN=%s\\n' "$TOKEN"\n`, dir, { AUTHD: authd.url })
  t.equal(r.code, 0)
  t.equal(r.stderr, '')
  const [out, tokenLine] = r.stdout.split('\nTOKEN=')
  const token = tokenLine!.trim()
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the sed line extracted the access token')

  const [me, refreshed, loggedOut, ...rest] = documents(out!) as any[]
  t.same(rest, [], 'three responses printed')
  t.same(me, { success: true, data: { id: reg.body.data.user.id, email: 'admin@example.com', mfaEnabled: false } }, 'who am I')
  t.match(refreshed, { success: true, data: { accessToken: String, tokenType: 'Bearer', expiresIn: Number, user: { email: 'admin@example.com' } } }, 'refresh from the cookie jar')
  t.same(loggedOut, { success: true, data: {} }, 'log out')

  // and the logout took: the token from the block is dead, and the jar holds no live cookie
  const after = await call(authd.url, 'GET', '/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
  t.equal(after.status, 401)
  const jar = readFileSync(join(dir, 'jar.txt'), 'utf8')
  t.notMatch(jar, /\tauthd_rt\t\S+/, 'the jar no longer holds the refresh cookie')
  const replay = await bash(`curl -s -b jar.txt -X POST $AUTHD/api/auth/refresh`, dir, { AUTHD: authd.url })
  t.same(JSON.parse(replay.stdout), { success: false, message: 'Refresh token is required' })
})
