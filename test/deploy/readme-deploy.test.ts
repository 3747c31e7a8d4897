/**
 * The README's "Deploy on a VM", followed step by step where a test can: what it installs is in
 * the package, the paths it uses are the ones the unit and the config use, and authd run as the
 * unit runs it (config/auth.toml, production defaults, on a Unix socket) answers readyz, takes the
 * first user from authctl, passes authctl smoke, believes X-Forwarded-For over its socket, and stops
 * cleanly on SIGTERM. What only a real VM can do (apt, systemd, certificates) is not run here.
 */
import { execFile, spawn } from 'node:child_process'
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { request as httpRequest } from 'node:http'
import { AUTHCTL_BIN, AUTHD_BIN, ROOT } from '../helpers/app.js'
import { spawnDaemon, type Daemon } from '../helpers/daemon.js'
import { writeSudo } from '../helpers/readme.js'
import { configFile, installed, readUnit, readVmConfig, value } from './files.js'

const run = promisify(execFile)
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const section = /\n## Deploy on a VM\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? ''
/** the shell lines of the section's code blocks, continuation lines joined */
const lines = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.replace(/\\\n\s*/g, '').split('\n').filter((l) => l.trim() !== ''))
const withoutComment = (l: string): string => l.replace(/\s+#.*$/, '').trim()
const lineWith = (re: RegExp): string => {
  const found = lines.find((l) => re.test(l))
  if (found === undefined) throw new Error(`the README's deploy section has no line matching ${re}`)
  return withoutComment(found)
}

const unit = readUnit()
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string> }
const VM_CONFIG = '/etc/authd/auth.toml'
const PASSWORD = 'a long passphrase for the first admin'
/** the one place backups go, in every section of the README and in docs/ */
const BACKUPS = '/var/backups/authd'

t.test('the section is there, with its steps', async (t) => {
  t.ok(section.length > 0, 'README has "## Deploy on a VM"')
  t.ok(lines.length >= 15, 'with its commands')
  t.match(readme, /\[docs\/observability\.md\]\(docs\/observability\.md\)/, 'and links the observability reference')
})

t.test('step 1 installs a package that holds everything the later steps use', async (t) => {
  const install = lineWith(/npm install -g /)
  t.equal(install, `sudo npm install -g ./${pkg.name}-${pkg.version}.tgz`, 'the tarball npm pack writes')
  t.same(Object.keys(pkg.bin).sort(), ['authctl', 'authd'], 'global bins: authd and authctl in npm\'s global bin directory')
  t.match(value(unit, 'Service', 'ExecStart'), /^authd /, "the unit runs npm's global authd, by name: systemd finds it in /usr/local/bin or /usr/bin")
  const packed = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, timeout: 60_000 })
  const files = new Set((JSON.parse(packed.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path))
  const used = [...new Set([...section.matchAll(/\$\(npm root -g\)\/authd\/(config\/[\w.]+)/g)].map((m) => m[1]!))]
  t.same(used.sort(), ['config/auth.toml', 'config/authd.caddy', 'config/authd.service', 'config/nginx.conf'])
  for (const f of [...used, 'bin/authd.js', 'bin/authctl.js', 'dist/daemon/main.js', 'dist/cli/main.js', 'README.md']) t.ok(files.has(f), `the package holds ${f}`)
})

t.test('steps 2 and 3 put the files where the unit looks for them', async (t) => {
  const useradd = lineWith(/useradd /)
  t.match(useradd, new RegExp(` ${value(unit, 'Service', 'User')}$`), 'the user the unit runs as')
  t.match(useradd, /--system/)
  t.match(useradd, /--shell \/usr\/sbin\/nologin/)
  t.match(lineWith(/config\/auth\.toml"/), new RegExp(` ${VM_CONFIG}$`), 'the config goes where ExecStart reads it')
  t.match(value(unit, 'Service', 'ExecStart'), new RegExp(`--config ${VM_CONFIG}$`))
  t.match(lineWith(/config\/authd\.service"/), / \/etc\/systemd\/system\/authd\.service$/)
  t.equal(lineWith(/systemctl enable/), 'sudo systemctl enable --now authd')
  const checked = await run(process.execPath, [AUTHD_BIN, 'check-config', '--config', configFile('auth.toml')], { timeout: 30_000 })
  t.match(checked.stdout, /public_url = "https:\/\/auth\.example\.com"/, '`authd check-config` accepts config/auth.toml')
})

t.test("step 4 with Caddy adds authd's site to the Caddyfile there is, and replaces nothing", async (t) => {
  const caddyLines = lines.filter((l) => l.includes('/etc/caddy/'))
  for (const l of caddyLines) t.notMatch(withoutComment(l), /(install|cp|mv) .*\/etc\/caddy\/Caddyfile$|tee (?!-a )[^|]*\/etc\/caddy\/Caddyfile|[^>]> *\/etc\/caddy\/Caddyfile/, `never written over: ${l}`)
  const install = lineWith(/config\/authd\.caddy"/)
  const snippet = / (\/etc\/caddy\/\S+)$/.exec(install)?.[1]
  t.equal(snippet, '/etc/caddy/authd.caddy', 'the snippet goes beside the Caddyfile')
  // the README's lines, run as written but in a temp /etc/caddy, on a Caddyfile that serves a site already, twice
  const dir = t.testdir()
  const etc = join(dir, 'caddy')
  mkdirSync(etc)
  const existing = '{\n\temail admin@example.com\n}\n\n:80 {\n\tfile_server\n}\n'
  writeFileSync(join(etc, 'Caddyfile'), existing)
  const script = caddyLines
    .map(withoutComment)
    .filter((l) => !/sudoedit|systemctl|caddy validate/.test(l))
    .map((l) => l.replaceAll('sudo ', '').replaceAll('"$(npm root -g)/authd/', `"${ROOT}/`).replaceAll('/etc/caddy/', `${etc}/`))
    .join('\n')
  t.match(script, /tee -a/, 'the step appends to the Caddyfile')
  for (let i = 0; i < 2; i++) await run('bash', ['-euo', 'pipefail', '-c', script], { timeout: 30_000 })
  const after = readFileSync(join(etc, 'Caddyfile'), 'utf8')
  t.ok(after.startsWith(existing), 'what the Caddyfile held stays, global options first')
  t.same(after.slice(existing.length).split('\n').filter((l) => l !== ''), [`import ${etc}/authd.caddy`], 'one import line, however often the step runs')
  t.equal(readFileSync(join(etc, 'authd.caddy'), 'utf8'), readFileSync(configFile('authd.caddy'), 'utf8'), 'the snippet installed')
  t.ok(lines.some((l) => withoutComment(l) === 'sudo caddy validate --adapter caddyfile --config /etc/caddy/Caddyfile'), 'and Caddy checks the result before the restart')
})

t.test(`backups are described in one place, "Back up and restore", and go to ${BACKUPS}`, async (t) => {
  const texts: Array<[string, string]> = [['README.md', readme], ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f): [string, string] => [`docs/${f}`, readFileSync(join(ROOT, 'docs', f), 'utf8')])]
  let seen = 0
  for (const [name, text] of texts) {
    for (const m of text.matchAll(/authctl\b[^\n]*? (backup|export) (\/[^\s`]+)/g)) {
      seen++
      t.ok(m[2]!.startsWith(`${BACKUPS}/`), `${name}: authctl ${m[1]} ${m[2]}`)
    }
  }
  t.ok(seen >= 3, `${seen} backups and exports to an absolute path`)
  const backUp = /\n### Back up and restore\n([\s\S]*?)\n##/.exec(readme)?.[1] ?? ''
  const setup = `sudo install -d -m 0700 -o authd -g authd ${BACKUPS}`
  t.equal(readme.split(setup).length - 1, 1, 'the directory is made in one place')
  t.ok(backUp.includes(setup), 'in "Back up and restore", for the authd user only')
  t.match(backUp, /authctl sessions\s+revoke --all --yes/, 'which also says what to do after a restore')
  t.match(section, /\[Back up and restore\]\(#back-up-and-restore\)/, 'the deploy section links it')
  t.notMatch(section, /authctl [^\n]*backup /, 'and runs no backup of its own')
  const durability = /\n## Durability\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? ''
  t.match(durability, /\[Back up and\s+restore\]\(#back-up-and-restore\)/, 'Durability links it')
  t.notMatch(durability, /authctl (backup|sessions revoke --all)/, 'and gives no backup steps or advice of its own')
})

t.test("Operate: journalctl -u authd reads the journal of the unit step 3 installs (systemd's: not run here)", async (t) => {
  // the journal is systemd's: a container has none, so the line is held to the files it depends on
  t.equal(lineWith(/^journalctl /), 'journalctl -u authd -f')
  t.match(lineWith(/config\/authd\.service"/), / \/etc\/systemd\/system\/authd\.service$/, 'the unit is authd.service')
  // authd logs to standard output only (JSON lines: the daemon below)
  for (const key of ['StandardOutput', 'StandardError']) t.equal(value(unit, 'Service', key), undefined, `no ${key}=: what authd writes goes to the journal`)
})

t.test('authd, run as the unit runs it, serves the first user and the smoke test', async (t) => {
  const dir = t.testdir()
  const data = join(dir, 'data')
  // ExecStart exactly, but this checkout's authd and config, the store and the socket in temp
  // directories (a socket path is at most 107 bytes: tap's test directories are longer)
  const [, ...args] = value(unit, 'Service', 'ExecStart')!.split(' ')
  t.same(args, ['start', '--config', VM_CONFIG])
  const vmSocket = readVmConfig().server.socket as string
  t.equal(vmSocket, '/run/authd/authd.sock')
  const runDir = mkdtempSync(join(tmpdir(), 'authd-run-'))
  t.teardown(() => rmSync(runDir, { recursive: true, force: true }))
  const socket = join(runDir, 'authd.sock')
  const authd = await startOnSocket(t, data, socket)
  t.match(authd.output(), /"dev":false/, 'production mode')
  t.notMatch(authd.output(), /"port":/, 'and no TCP port')
  t.equal(lstatSync(socket).mode & 0o777, 0o660, 'the socket opens for the user and group only')

  // step 3's readyz and "Operate"'s metrics: the README's curl lines as written, on this socket
  // (sudo: the tests' stand-in, test/helpers/readme.ts)
  const readyz = lineWith(/\/readyz/)
  t.equal(readyz, `sudo curl -s --unix-socket ${vmSocket} http://localhost/readyz`)
  const metricsLine = lineWith(/\/metrics$/)
  t.equal(metricsLine, `sudo curl -s --unix-socket ${vmSocket} http://localhost/metrics`)
  const expected = /\/readyz\s+#\s*(\{.*\})/.exec(lines.find((l) => l.includes('/readyz'))!)![1]!
  if (installed('curl')) {
    const sbin = writeSudo(join(dir, 'sbin'))
    const asWritten = async (line: string): Promise<string> =>
      (await run('bash', ['-euo', 'pipefail', '-c', line.replaceAll(vmSocket, socket)], { env: { ...process.env, PATH: `${sbin}:${process.env.PATH}` }, timeout: 30_000 })).stdout
    t.same(JSON.parse(await asWritten(readyz)), JSON.parse(expected), 'readyz answers what the README says')
    const metrics = await asWritten(metricsLine)
    t.match(metrics, /^# TYPE authd_login_total counter$/m, 'the metrics, in Prometheus text')
    t.match(metrics, /^authd_http_request_duration_seconds_count\{route="\/readyz",method="GET",status="200"\} 1$/m, 'with the readyz just asked')
  } else {
    t.comment('curl is not installed (.ci/run installs it): readyz asked without it')
    t.same(JSON.parse((await overSocket(socket, 'GET', '/readyz')).text), JSON.parse(expected), 'readyz answers what the README says')
  }

  // step 5: the README's authctl lines, as the authd user would run them (password on stdin)
  const authctl = async (readmeLine: string, extra: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> => {
    const argv = readmeLine.replace(/^sudo -u authd authctl /, '').split(' ').map((a) => (a === VM_CONFIG ? configFile('auth.toml') : a))
    return new Promise((resolve) => {
      const p = spawn(process.execPath, [AUTHCTL_BIN, ...argv, '--data', data, ...extra], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
      p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
      const timer = setTimeout(() => p.kill('SIGKILL'), 30_000)
      p.once('exit', (code) => {
        clearTimeout(timer)
        resolve({ code: code ?? -1, stdout, stderr })
      })
      p.stdin.end(input)
    })
  }
  const add = lineWith(/authctl .*user add /)
  t.equal(add, `sudo -u authd authctl --config ${VM_CONFIG} user add admin@example.com`)
  const added = await authctl(add, ['--password-stdin'], `${PASSWORD}\n`)
  t.equal(added.code, 0, `authctl user add: ${added.stderr}`)

  const smokeLine = lineWith(/authctl .*smoke /)
  t.equal(smokeLine, `sudo -u authd authctl --config ${VM_CONFIG} smoke --email admin@example.com`)
  // on the VM smoke goes through the proxy to public_url; here through a bare TCP relay to the socket
  const relay = createServer((c) => {
    const u = connect(socket)
    c.pipe(u).pipe(c)
    c.on('error', () => u.destroy())
    u.on('error', () => c.destroy())
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => relay.close(() => resolve())))
  const relayUrl = `http://127.0.0.1:${(relay.address() as { port: number }).port}`
  const smoke = await authctl(smokeLine, ['--url', relayUrl, '--password-stdin'], `${PASSWORD}\n`)
  t.equal(smoke.code, 0, `authctl smoke passes: ${smoke.stdout}${smoke.stderr}`)
  for (const step of ['login', 'me', 'refresh', 'logout', 'refresh_after_logout']) t.match(smoke.stdout, new RegExp(`ok\\s+\\d+ ${step}\\b`), `smoke step ${step}`)

  // step 4: the proxy, over the socket, is believed about the client's address
  const loginIp = async (xff: string | undefined): Promise<unknown> => {
    // the log is written in batches (at the latest 100 ms after a batch's first line): the lines
    // of the logins before this one are waited for, so that the line found below is this one's
    for (let seen = -1, i = 0; i < 40 && seen !== authd.output().length; i++) {
      seen = authd.output().length
      await new Promise((r) => setTimeout(r, 150))
    }
    const before = authd.output().length
    const body = JSON.stringify({ email: 'someone@example.com', password: 'not the password' })
    const r = await overSocket(socket, 'POST', '/api/auth/login', { 'content-type': 'application/json', ...(xff === undefined ? {} : { 'x-forwarded-for': xff }) }, body)
    t.equal(r.status, 401)
    for (let i = 0; i < 20 && !authd.output().slice(before).includes('"event":"login"'); i++) await new Promise((r) => setTimeout(r, 50))
    const line = authd.output().slice(before).split('\n').find((l) => l.includes('"event":"login"'))
    return line === undefined ? undefined : (JSON.parse(line) as { ip: string }).ip
  }
  // nginx's $proxy_add_x_forwarded_for: what the client sent, then the address nginx saw
  t.equal(await loginIp('198.51.100.66, 203.0.113.7'), '203.0.113.7', 'through the proxy: the client address nginx appended, not the one the client made up')
  t.equal(await loginIp(undefined), '127.0.0.1', 'a local process without the header (root with curl) counts as 127.0.0.1')

  // systemctl stop: SIGTERM, a clean exit (Restart=on-failure leaves it stopped)
  t.equal(await authd.stop(), 0, 'SIGTERM stops authd with exit 0')
  t.match(authd.output(), /"event":"stopping","signal":"SIGTERM"/)
})

/** One HTTP request over a Unix socket */
function overSocket(socketPath: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, method, path, agent: false, timeout: 10_000, headers })
    req.on('response', (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += c.toString()))
      res.on('end', () => resolve({ status: res.statusCode!, text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** `authd start --config config/auth.toml` as the unit runs it, its socket moved to `socket` */
async function startOnSocket(t: Test, data: string, socket: string): Promise<Daemon> {
  const d = await spawnDaemon(t, data, { socket, args: ['--config', configFile('auth.toml')] })
  if (d.url !== `unix:${socket}`) throw new Error(`authd did not listen on ${socket}:\n${d.output()}`)
  return d
}
