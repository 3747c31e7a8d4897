/**
 * config/authd.service: the directives an operator relies on, consistency with config/auth.toml
 * and the package, and systemd's own verdict (`systemd-analyze verify` and `security`) where
 * systemd is installed.
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { AUTHD_BIN } from '../helpers/app.js'
import { configFile, installed, readUnit, readVmConfig, value, values } from './files.js'

const unit = readUnit()
const service = (key: string): string | undefined => value(unit, 'Service', key)
const yes = (v: string | undefined): boolean => ['yes', 'true', 'on', '1'].includes(String(v))

t.test('the unit runs authd start as a dedicated user, on the config and state directory the README installs', async (t) => {
  t.same(Object.keys(unit), ['Unit', 'Service', 'Install'])
  t.equal(service('User'), 'authd', 'a dedicated user')
  t.equal(service('Group'), 'authd')
  // a bare name: systemd finds it in /usr/local/bin or /usr/bin, wherever npm's global prefix put it
  t.equal(service('ExecStart'), 'authd start --config /etc/authd/auth.toml', 'the global npm install and the README config path')
  t.notOk(service('ExecStart')!.includes('--dev'), 'production defaults, never --dev')
  t.equal(service('StateDirectory'), 'authd')
  t.equal(service('StateDirectoryMode'), '0700', 'the store directory is private, as authd itself creates it')
  t.equal(readVmConfig().store.path, `/var/lib/${service('StateDirectory')}`, 'config/auth.toml keeps the store in the StateDirectory')
  t.equal(service('WorkingDirectory'), '/var/lib/authd')
  t.equal(service('UMask'), '0077')
  t.same(values(unit, 'Install', 'WantedBy'), ['multi-user.target'])
})

t.test('the unit sandboxes the service', async (t) => {
  t.equal(service('ProtectSystem'), 'strict', 'ProtectSystem=strict: everything read-only but the StateDirectory')
  t.ok(yes(service('NoNewPrivileges')), 'NoNewPrivileges')
  t.ok(yes(service('PrivateTmp')), 'PrivateTmp')
  t.ok(yes(service('ProtectHome')), 'ProtectHome')
  t.ok(yes(service('PrivateDevices')), 'PrivateDevices')
  t.equal(service('CapabilityBoundingSet'), '', 'no capabilities (authd listens on an unprivileged port)')
  t.equal(service('RestrictAddressFamilies'), 'AF_INET AF_INET6 AF_UNIX')
  t.notOk(yes(service('MemoryDenyWriteExecute')), "not MemoryDenyWriteExecute: V8's JIT needs it")
  t.same(values(unit, 'Service', 'SystemCallFilter'), ['@system-service', '~@privileged'])
  t.equal(service('SystemCallErrorNumber'), 'EPERM', 'a filtered call fails instead of killing the process')
  t.notOk(service('ReadWritePaths'), 'nothing writable beyond the StateDirectory')
})

t.test("the unit bounds what authd may write to the journal, and holds authd's socket", async (t) => {
  // a flood of junk requests from many clients still writes a line per request: journald's
  // per-service bound drops the excess (one client's junk authd gathers itself)
  const interval = /^(\d+)s$/.exec(service('LogRateLimitIntervalSec') ?? '')
  t.ok(interval, 'LogRateLimitIntervalSec in seconds')
  const burst = Number(service('LogRateLimitBurst'))
  t.ok(Number.isInteger(burst) && burst > 0, 'LogRateLimitBurst a count')
  t.ok(burst / Number(interval![1]) <= 10_000, `at most 10 000 lines a second (${burst} per ${interval![1]} s)`)
  t.ok(burst / Number(interval![1]) >= 1_000, 'and room for a busy authd (a line per request)')
  t.equal(service('RuntimeDirectory'), 'authd', '/run/authd for the socket')
  t.equal(service('RuntimeDirectoryMode'), '0750', "authd's group (the proxy) may reach the socket, nobody else")
  t.equal(readVmConfig().server.socket, '/run/authd/authd.sock', 'config/auth.toml listens there')
  t.same(values(unit, 'Service', 'IPAddressDeny'), ['any'], 'no IP traffic: the proxy comes over the socket')
  t.same(values(unit, 'Service', 'IPAddressAllow'), [])
})

t.test('the unit restarts on failure and stops with SIGTERM, leaving authd time to drain', async (t) => {
  t.equal(service('Restart'), 'on-failure')
  t.match(service('RestartSec'), /^\d+s$/)
  t.equal(service('KillSignal'), 'SIGTERM', 'authd drains in-flight requests on SIGTERM')
  const stop = /^(\d+)s$/.exec(service('TimeoutStopSec') ?? '')
  t.ok(stop, 'TimeoutStopSec in seconds')
  // authd waits up to 10 s for in-flight requests (src/daemon/main.ts), then closes the store
  const main = readFileSync(new URL('../../src/daemon/main.ts', import.meta.url), 'utf8')
  const drainMs = Number(/running\.stop\(([\d_]+)\)/.exec(main)![1]!.replace(/_/g, ''))
  t.ok(Number(stop![1]) * 1000 > drainMs, `TimeoutStopSec (${stop![1]} s) is longer than the drain (${drainMs} ms), so systemd never kills a draining authd`)
})

const systemdSkip = installed('systemd-analyze') ? false : 'systemd-analyze is not installed (not a systemd machine): the directives are checked above, systemd itself does not run here'

t.test('systemd-analyze verify accepts the unit without a warning', { skip: systemdSkip }, async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'authd.service')
  if (existsSync('/usr/local/bin/authd') || existsSync('/usr/bin/authd')) copyFileSync(configFile('authd.service'), file)
  else {
    // authd is not installed globally on this machine: point ExecStart at this checkout's authd
    // (only the program path changes; verify checks that it exists and is executable)
    const text = readFileSync(configFile('authd.service'), 'utf8')
    writeFileSync(file, text.replace(/^ExecStart=authd /m, `ExecStart=${process.execPath} ${AUTHD_BIN} `))
  }
  const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', timeout: 60_000 })
  const mine = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes('authd.service'))
  t.equal(r.status, 0, 'verify exits 0')
  t.same(mine, [], 'no warning about the unit (unknown keys, bad values)')
})

const offline = systemdSkip === false && spawnSync('systemd-analyze', ['--help'], { encoding: 'utf8' }).stdout.includes('--offline')
const securitySkip = systemdSkip || (offline ? false : 'this systemd-analyze has no --offline (systemd < 252)')

t.test('systemd-analyze security rates the sandbox OK', { skip: securitySkip }, async (t) => {
  const r = spawnSync('systemd-analyze', ['security', '--offline=yes', '--no-pager', configFile('authd.service')], { encoding: 'utf8', timeout: 60_000 })
  const m = /Overall exposure level for authd\.service: ([\d.]+) (\w+)/.exec(r.stdout)
  t.ok(m, 'an overall exposure level', { stdout: r.stdout.slice(-500), stderr: r.stderr })
  t.ok(Number(m![1]) <= 2.0, `exposure ${m![1]} ${m![2]} is at most 2.0 (systemd calls up to 3.9 "OK")`)
})
