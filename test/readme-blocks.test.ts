/**
 * Every fenced code block of the README, and what runs it. The blocks are found in the README
 * itself, each named by its nearest heading and its place under it ("Quick start #2",
 * test/helpers/readme.ts); INVENTORY says what runs each one, and a block that is added, removed or
 * moved fails the first test until INVENTORY names what runs it.
 *
 * The walk runs the blocks a new user runs, in the README's order, as written, as the Quick start
 * sets them up: the first command's `authd start --dev` in a directory whose bin/ is the
 * checkout's (the line without its `npm ci`, which .ci/run ran before the suite), then each block
 * in one terminal (script(1) gives it a pty, so authctl asks for passwords as it does for a person)
 * in that directory with bin/ on PATH, the shell variables a block sets kept for the next ones.
 * What a person would type at a prompt, the test types (a TOTP code: the test is the app). The one
 * change to the text: the daemon listens on a free port P instead of 8080 (AUTHD_SERVER_PORT=P
 * for authd and authctl, and `127.0.0.1:8080` read as `127.0.0.1:P`), so the run never collides
 * with anything on the machine.
 *
 * A block written for a VM as root (`sudo -u authd authctl --config /etc/authd/auth.toml …`, a
 * backup and its restore, the move to PostgreSQL) runs in the walk too, on the walk's store, as
 * test/helpers/readme.ts runs a VM's lines on a test machine: /etc/authd, /var/lib/authd (the
 * Quick start's ./data) and /var/backups/authd in the walk's directory, the authd user's part
 * played by the user running the tests, `sudo` a stand-in that runs the command (as root, as the
 * tests run) or, for `sudo -u postgres`, runs it as that user. The lines of those blocks that only
 * systemd can carry out (`sudo systemctl stop|start authd`) are done by the test as the unit does
 * them, checked against config/authd.service: stop is SIGTERM, start runs the unit's ExecStart;
 * on the VM authd then listens on its socket behind the proxy, here on 127.0.0.1:P, which is
 * therefore its public_url. PostgreSQL is a throwaway server of the walk's own
 * (test/helpers/pg.ts), the libpq variables PGHOST and PGUSER pointing at it. Blocks that need
 * apt, systemd's journal, certificates or a proxy as root are run by the deploy tests
 * (test/deploy/) as far as a test can, or by the test named in INVENTORY.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Secret, TOTP } from 'otpauth'
import pg from 'pg'
import t from 'tap'
import { AUTHD_BIN, ROOT } from './helpers/app.js'
import { freePort } from './helpers/daemon.js'
import { ownPgServer } from './helpers/pg.js'
import { findPgBin } from './helpers/pg-server.mjs'
import { installVmConfig, onTestMachine, readmeBlocks, systemctlLine, testUser, withoutComment, writeSudo, type Block, type VmPlaces } from './helpers/readme.js'
import { installed, readUnit, value, values } from './deploy/files.js'

// the walk starts some sixty authctl and curl processes one after the other: on a loaded 2-core
// machine that takes minutes, more than tap's default per file
t.setTimeout(600_000)

/** How a block is run */
type Runner =
  /** run in the walk below, as written (`toml`: its comments hold a config, checked below too) */
  | { walk: true; toml?: true }
  /** run in the walk as a VM admin's block, on the walk's store (see the header) */
  | { vm: true; toml?: true }
  /** a terminal screen or printed output, compared in the walk with what the command prints */
  | { output: string }
  /** run by another test, which finds it in the README itself */
  | { by: string[]; why: string }
  /** the suite's own commands: `npm run build` runs below, as written; the rest is .ci/run */
  | { development: true }
  /** not run by any test yet: reported as a todo, so it shows in every run */
  | { todo: string }

const DEPLOY = 'test/deploy/readme-deploy.test.ts'
const TUI_SCREENS = { by: ['test/tui/readme-screens.test.ts'], why: 'a screen of the terminal UI: rendered and compared with the README line by line' }

/** every block of the README, in order: its first line (a check that it is the block meant) and what runs it */
const INVENTORY: Array<{ id: string; first: string; run: Runner }> = [
  { id: 'Quick start #1', first: 'npm ci && export PATH="$PWD/bin:$PATH" && authd start --dev', run: { walk: true } },
  { id: 'Quick start #2', first: 'curl -s -X POST http://127.0.0.1:8080/api/auth/register', run: { walk: true } },
  { id: 'Call the API #1', first: 'AUTHD=${AUTHD:-http://127.0.0.1:8080}', run: { walk: true } },
  { id: 'Second factor (TOTP) #1', first: 'TOKEN=$(curl -s', run: { walk: true } },
  { id: 'Second factor (TOTP) #2', first: 'MFA=$(curl -s', run: { walk: true } },
  { id: 'Administer with authctl #1', first: 'sudo -u authd authctl --config /etc/authd/auth.toml user list', run: { vm: true } },
  { id: 'Administer with authctl #2', first: 'authctl user add ann@example.com', run: { walk: true } },
  { id: 'Back up and restore #1', first: 'sudo install -d -m 0700 -o authd -g authd /var/backups/authd', run: { vm: true } },
  { id: 'Back up and restore #2', first: 'sudo systemctl stop authd', run: { vm: true } },
  { id: 'Export and import #1', first: '# 1. on the VM: stop authd', run: { vm: true, toml: true } },
  { id: 'Terminal UI #1', first: 'authctl tui', run: { walk: true } },
  { id: 'Terminal UI #2', first: 'authd · LMDB /tmp/authd/data', run: TUI_SCREENS },
  { id: 'Terminal UI #3', first: 'authd · LMDB /tmp/authd/data', run: TUI_SCREENS },
  { id: 'Terminal UI #4', first: 'authd · LMDB /tmp/authd/data', run: TUI_SCREENS },
  { id: 'Terminal UI #5', first: 'authd · LMDB /tmp/authd/data', run: TUI_SCREENS },
  { id: 'Terminal UI #6', first: 'authd · LMDB /tmp/authd/data', run: TUI_SCREENS },
  { id: 'Audit log #1', first: 'authctl audit list --user ann@example.com --since 7d', run: { walk: true } },
  { id: 'Audit log #2', first: '    SEQ  TIME (UTC)           EVENT                  USER', run: { output: 'authctl audit list' } },
  { id: 'Audit log #3', first: '// node check-audit.mjs authd-export.jsonl', run: { by: ['test/readme-audit.test.ts'], why: 'node: the chain check on exports, intact and tampered' } },
  { id: 'Deploy on a VM #1', first: 'sudo apt-get update', run: { by: [DEPLOY], why: 'apt and npm install -g as root: the package holds what later steps use' } },
  { id: 'Deploy on a VM #2', first: 'sudo useradd --system', run: { by: [DEPLOY], why: 'root: the user and config the unit expects, check-config on config/auth.toml' } },
  { id: 'Deploy on a VM #3', first: 'sudo install -m 0644 "$(npm root -g)/authd/config/authd.service"', run: { by: [DEPLOY, 'test/deploy/systemd.test.ts'], why: 'systemd: the unit checked, authd run as it runs it, the readyz line run as written on its socket' } },
  { id: 'Deploy on a VM #4', first: 'sudo apt-get install -y caddy', run: { by: [DEPLOY, 'test/deploy/proxy.test.ts'], why: 'the Caddyfile lines run as written in a temp /etc/caddy; caddy validate where installed' } },
  { id: 'Deploy on a VM #5', first: 'sudo apt-get install -y nginx', run: { by: ['test/deploy/proxy.test.ts'], why: 'the install and link lines run as written in a temp /etc/nginx, nginx -t where installed; apt, usermod, certbot and systemctl checked against the files' } },
  { id: 'Deploy on a VM #6', first: 'sudo -u authd authctl --config /etc/authd/auth.toml user add admin@example.com', run: { by: [DEPLOY], why: 'these two lines, as the authd user would run them, through a relay to the socket' } },
  { id: 'Deploy on a VM #7', first: 'journalctl -u authd -f', run: { by: [DEPLOY], why: 'the metrics line runs as written on the socket of authd run as the unit runs it; journalctl needs systemd\'s journal: checked against the unit' } },
  { id: 'Several instances on PostgreSQL #1', first: 'sudo -u postgres createuser --pwprompt authd', run: { walk: true, toml: true } },
  { id: 'Development #1', first: 'npm ci              # install and build (dist/)', run: { development: true } },
]

const blocks = readmeBlocks()
const block = (id: string): Block => {
  const b = blocks.find((x) => x.id === id)
  if (b === undefined) throw new Error(`README.md has no block ${id}`)
  return b
}

/** the TOML in the comment lines of a block (`#   [store]` under "auth.toml …" / "point the config at …") */
const commentToml = (text: string): string =>
  text
    .split('\n')
    .filter(isTomlComment)
    .map((l) => l.replace(/^#\s+/, '').replace(/\s+#.*$/, ''))
    .join('\n')
const isTomlComment = (l: string): boolean => /^#\s{2,}\S/.test(l)

t.test('every code block of the README is in INVENTORY, which says what runs it', async (t) => {
  t.same(
    blocks.map((b) => b.id),
    INVENTORY.map((e) => e.id),
    'the README\'s blocks, in order, are the inventory\'s: a new block needs an entry saying what runs it',
  )
  for (const entry of INVENTORY) {
    const b = blocks.find((x) => x.id === entry.id)
    if (b === undefined) continue
    t.ok(b.text.startsWith(entry.first), `${entry.id} (README.md:${b.line}) starts with ${JSON.stringify(entry.first)}`)
    const run = entry.run
    if ('by' in run) {
      for (const file of run.by) t.ok(existsSync(join(ROOT, file)), `${entry.id}: ${file} exists`)
    }
    if ('todo' in run) t.fail(`${entry.id} (README.md:${b.line}) is run by no test`, { todo: run.todo })
  }
})

t.test('the TOML in the comments of the PostgreSQL blocks is a config authd check-config takes', async (t) => {
  const entries = INVENTORY.filter((e) => 'toml' in e.run && e.run.toml === true)
  t.same(entries.map((e) => e.id), ['Export and import #1', 'Several instances on PostgreSQL #1'])
  for (const entry of entries) {
    const toml = commentToml(block(entry.id).text)
    t.match(toml, /\[store\]\nbackend = "postgres"\nurl = "postgres:\/\/[^"]+"/, `${entry.id}: its TOML`)
    const dir = t.testdir({ 'auth.toml': `${toml}\n` })
    const r = await run(process.execPath, [AUTHD_BIN, 'check-config', '--config', join(dir, 'auth.toml')], { cwd: dir, env: { PATH: process.env.PATH!, HOME: process.env.HOME! } })
    t.equal(r.code, 0, `${entry.id}: check-config takes it: ${r.stderr}`)
    t.match(r.stdout, /backend = "postgres"/)
  }
})

t.test('Development #1: npm ci, npm test and npm run test:slow are what .ci/run runs (they are the suite itself); npm run build runs here as written', async (t) => {
  const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8')
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  const commands = block('Development #1').text.split('\n').map(withoutComment)
  t.same(commands, ['npm ci', 'npm test', 'npm run test:slow', 'npm run build'])
  for (const cmd of commands) {
    const script = /^npm (?:run )?(\S+)$/.exec(cmd)?.[1]
    t.ok(script === 'ci' || script! in scripts, `${cmd}: npm has it`)
    if (cmd !== 'npm run build') t.match(ci, new RegExp(`^(?:npm|.*\\bnpm) ${cmd.slice(4)}\\b`, 'm'), `${cmd}: .ci/run runs it`)
  }
  // npm run build, in a copy of the checkout's sources (building this checkout's dist/ would change
  // it under the tests running beside this one); node_modules is the checkout's, as after npm ci
  const copy = t.testdir()
  for (const f of ['package.json', 'tsconfig.json', 'tsconfig.build.json']) copyFileSync(join(ROOT, f), join(copy, f))
  cpSync(join(ROOT, 'src'), join(copy, 'src'), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
  const r = await run('bash', ['-c', 'npm run build'], { cwd: copy, env: { PATH: process.env.PATH!, HOME: process.env.HOME! }, timeoutMs: 300_000 })
  t.equal(r.code, 0, `npm run build runs as written: ${r.stdout}${r.stderr}`)
  // what bin/authd.js and bin/authctl.js load
  for (const entry of ['dist/daemon/main.js', 'dist/cli/main.js']) t.ok(existsSync(join(copy, entry)), `it built ${entry}`)
})

/** One process to its end: exit code and outputs */
function run(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string>; input?: string; timeoutMs?: number }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
    p.on('error', reject)
    p.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    p.stdin.end(opts.input ?? '')
  })
}

/** What the test types at a prompt: when the output since the last answer matches, this reply (and Enter) */
type Answer = [RegExp, string | ((m: RegExpExecArray) => string), enter?: boolean]

const skipWalk = ['curl', 'script'].find((cmd) => !installed(cmd))

t.test('the walk: the Quick start, then every block a new user runs, as written', { skip: skipWalk === undefined ? false : `${skipWalk} is not installed (.ci/run installs curl; script is util-linux's)` }, async (t) => {
  const home = t.testdir()
  // the checkout as the Quick start sees it: its bin/ is this one's (node follows the links to
  // bin/*.js and dist/), the daemon's ./data and every file the blocks write are the test's own
  const checkout = join(home, 'authd')
  mkdirSync(checkout)
  symlinkSync(join(ROOT, 'bin'), join(checkout, 'bin'))
  const port = await freePort()
  // the machine's PATH, with the stand-in for sudo (test/helpers/readme.ts) first
  const machinePath = `${writeSudo(join(home, 'sbin'))}:${process.env.PATH!}`
  const env: Record<string, string> = { PATH: machinePath, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8', AUTHD_SERVER_PORT: String(port) }
  const asWritten = (text: string): string => text.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)

  /** a running authd: the Quick start's, or the VM's as its unit runs it */
  interface Running {
    proc: ChildProcess
    exited: Promise<number | null>
    log(): string
  }
  const started: Running[] = []
  t.teardown(() => {
    for (const d of started) if (d.proc.exitCode === null && d.proc.signalCode === null) process.kill(-d.proc.pid!, 'SIGKILL')
  })
  /**
   * `command` in bash, in its own process group (Ctrl-C reaches authd, and bash returns its exit
   * code), until authd says it listens on P
   */
  const startDaemon = async (what: string, command: string, cwd: string, extraEnv: Record<string, string> = {}): Promise<Running> => {
    const proc = spawn('bash', ['-c', command], { cwd, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let log = ''
    proc.stdout!.on('data', (c: Buffer) => (log += c.toString()))
    proc.stderr!.on('data', (c: Buffer) => (log += c.toString()))
    const d: Running = { proc, exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))), log: () => log }
    started.push(d)
    for (let i = 0; i < 600 && !log.includes('authd listening on') && proc.exitCode === null; i++) await sleep(50)
    t.match(log, `authd listening on http://127.0.0.1:${port}`, `${what}: authd serves (${log.slice(0, 2000)})`)
    return d
  }
  const stopDaemon = async (d: Running, signal: NodeJS.Signals): Promise<number | null> => {
    process.kill(-d.proc.pid!, signal)
    return d.exited
  }

  // Quick start, line 1, without its `npm ci` (done by .ci/run); Ctrl-C at the end
  const [first, second] = block('Quick start #1').text.split('\n').map(withoutComment)
  t.match(first, /^npm ci && /)
  t.equal(second, 'npm test', 'the second command is the suite (.ci/run runs it)')
  const quickStart = first!.replace(/^npm ci && /, '')
  let daemon = await startDaemon('Quick start #1', quickStart, checkout)

  // every block after it, in the README's order, in one terminal: the variables a block sets are kept
  const state = join(home, '.walk-state')
  const names = new Set<string>()
  const totp = { secret: '', step: 0 }
  const code = (step: number): string => new TOTP({ secret: Secret.fromBase32(totp.secret) }).generate({ timestamp: step * 30_000 })
  const inTerminal = async (id: string, text: string, answers: Answer[] = [], extraEnv: Record<string, string> = {}): Promise<string> => {
    // the variables it sets: NAME=… at the start of a line, and `read -rp '…' NAME`
    for (const m of text.matchAll(/^([A-Za-z_]\w*)=|^read -rp '[^']*' (\w+)/gm)) names.add(m[1] ?? m[2]!)
    const script = join(home, `block-${id.replace(/\W+/g, '-')}.sh`)
    writeFileSync(
      script,
      [
        'set -eo pipefail',
        `export PATH="${join(checkout, 'bin')}:$PATH"`, // the second terminal's `export PATH="$PWD/bin:$PATH"`
        'stty cols 80 rows 24 2>/dev/null || true', // "80×24 is enough" (Terminal UI)
        `[ -f ${state} ] && source ${state}`,
        text,
        // (declare -p with no names would print every variable of the shell)
        names.size === 0 ? '' : `declare -p ${[...names].join(' ')} > ${state} 2>/dev/null || true`,
        '',
      ].join('\n'),
    )
    const started = Date.now()
    const p = spawn('script', ['-qefc', `bash --noprofile --norc ${script}`, '/dev/null'], { cwd: checkout, env: { ...env, ...extraEnv }, stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    p.stdout.on('data', (c: Buffer) => (out += c.toString()))
    p.stderr.on('data', (c: Buffer) => (out += c.toString()))
    const done = new Promise<number | null>((resolve) => p.on('close', resolve))
    let finished = false
    void done.then(() => (finished = true))
    let from = 0
    for (const [re, reply, enter = true] of answers) {
      let m: RegExpExecArray | null = null
      for (let i = 0; i < 1200 && !finished && (m = re.exec(out.slice(from))) === null; i++) await sleep(50)
      if (m === null) break
      from += m.index + m[0].length
      await sleep(100) // the prompt is out; the terminal goes raw just after it
      p.stdin.write(`${typeof reply === 'string' ? reply : reply(m)}${enter ? '\r' : ''}`)
    }
    const timer = setTimeout(() => p.kill('SIGKILL'), 120_000)
    const exit = await done
    clearTimeout(timer)
    p.stdin.destroy()
    const text2 = out.replace(/\r\n?/g, '\n')
    t.equal(exit, 0, `${id} runs as written (${((Date.now() - started) / 1000).toFixed(1)} s); it printed:\n${text2}`)
    return text2
  }

  let out = await inTerminal('Quick start #2', asWritten(block('Quick start #2').text))
  t.match(out, /^\{"success":true,"data":\{"accessToken":"[\w.-]+","tokenType":"Bearer"/, 'Quick start #2: admin@example.com registered')

  out = await inTerminal('Call the API #1', asWritten(block('Call the API #1').text))
  t.match(out, /\{"success":true,"data":\{"id":"[\w-]+","email":"admin@example\.com","mfaEnabled":false\}\}/, 'Call the API: who am I')
  t.match(out, /\{"success":true,"data":\{\}\}$/, 'Call the API: signed out')

  out = await inTerminal('Second factor (TOTP) #1', asWritten(block('Second factor (TOTP) #1').text), [
    [
      /"secret":"([A-Z2-7]+)"/,
      (m) => {
        // the authenticator app: the secret from the setup answer, the code of the current step
        totp.secret = m[1]!
        totp.step = Math.floor(Date.now() / 30_000)
        return code(totp.step)
      },
    ],
  ])
  t.match(out, /"otpauthUrl":"otpauth:\/\/totp\/authd:admin%40example\.com\?secret=[A-Z2-7]+&issuer=authd&algorithm=SHA1&digits=6&period=30"/, 'the setup answer the README shows')
  t.match(out, /\{"success":true,"data":\{"recoveryCodes":\["\w{5}-\w{5}"(,"\w{5}-\w{5}"){9}\]\}\}/, 'confirmed: ten recovery codes')

  // the confirming step is used up: the app's next code (accepted one step early)
  out = await inTerminal('Second factor (TOTP) #2', asWritten(block('Second factor (TOTP) #2').text), [[/the code the app shows: /, () => code(totp.step + 1)]])
  t.match(out, /\{"success":true,"data":\{"accessToken":"[\w.-]+","tokenType":"Bearer","expiresIn":\d+,"user":\{"id":"[\w-]+","email":"admin@example\.com"\}/, 'signed in with the second factor')
  t.match(readFileSync(join(checkout, 'jar.txt'), 'utf8'), /\tauthd_rt\t/, 'the refresh cookie is in the jar')

  // ---- a VM admin's blocks, on the walk's store (see the header) ----
  const places: VmPlaces = { etc: join(home, 'etc', 'authd'), lib: join(checkout, 'data'), backups: join(home, 'var', 'backups', 'authd'), ...testUser() }
  const vmConfig = installVmConfig(places)
  // on the VM authd listens on its socket behind the proxy, whose address is public_url; here the
  // unit's authd listens on 127.0.0.1:P, so that is its public URL (for authctl smoke)
  const vmEnv = { AUTHD_SERVER_SOCKET: '', AUTHD_SERVER_PUBLIC_URL: `http://127.0.0.1:${port}` }
  const unit = readUnit()
  // the unit's command line and environment; `authd` is npm's global authd (systemd finds it in
  // /usr/local/bin or /usr/bin): the checkout's here, first on the PATH
  const execStart = value(unit, 'Service', 'ExecStart')!
  t.match(execStart, /^authd start --config \/etc\/authd\/auth\.toml$/)
  const unitCommand = `export PATH="${join(checkout, 'bin')}:$PATH" && exec ${onTestMachine(execStart, places)}`
  const unitEnv = Object.fromEntries(values(unit, 'Service', 'Environment').map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
  t.equal(value(unit, 'Service', 'KillSignal'), 'SIGTERM', 'systemctl stop sends SIGTERM')
  t.equal(onTestMachine(value(unit, 'Service', 'WorkingDirectory')!, places), places.lib, 'it runs in the store\'s directory')

  /** what systemd does for `sudo systemctl stop|start|restart authd` (the unit Deploy step 3 installs as authd.service) */
  const systemctl = async (id: string, line: string): Promise<void> => {
    const { action, unit: name } = systemctlLine(line)!
    t.equal(name, 'authd', `${id}: ${withoutComment(line)} names the unit installed as /etc/systemd/system/authd.service`)
    if (action !== 'start') t.equal(await stopDaemon(daemon, 'SIGTERM'), 0, `${id}: systemctl ${action}: SIGTERM, and authd exits 0 (Restart=on-failure leaves it stopped)`)
    if (action !== 'stop') daemon = await startDaemon(`${id}: systemctl ${action} authd`, unitCommand, places.lib, { ...unitEnv, ...vmEnv })
  }

  /**
   * A VM block in the walk: its lines as onTestMachine moves them, in the terminal, except the
   * systemctl lines (systemctl above) and, where a block says to edit the config, its TOML
   * comment lines (handed to `edit`). Returns what the terminal printed.
   */
  const onVm = async (id: string, answers: Answer[] = [], edit?: (toml: string) => void): Promise<string> => {
    const lines = block(id).text.split('\n')
    let printed = ''
    let chunk: string[] = []
    let part = 0
    const flush = async (): Promise<void> => {
      if (chunk.some((l) => withoutComment(l) !== '')) printed += await inTerminal(`${id} (part ${++part})`, asWritten(onTestMachine(chunk.join('\n'), places)), answers, vmEnv)
      chunk = []
    }
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!
      if (systemctlLine(line) !== null) {
        await flush()
        await systemctl(id, line)
      } else if (edit !== undefined && isTomlComment(line)) {
        await flush()
        const toml: string[] = []
        while (i < lines.length && isTomlComment(lines[i]!)) toml.push(lines[i++]!)
        i--
        edit(commentToml(toml.join('\n')))
      } else chunk.push(line)
    }
    await flush()
    return printed
  }

  out = await onVm('Administer with authctl #1')
  t.match(out, /admin@example\.com/, 'the VM line lists the users of the store')

  const PW = { ann: 'ann has a long passphrase', ann2: 'ann has a new long passphrase', smoke: 'the smoke user has a long passphrase' }
  out = await inTerminal('Administer with authctl #2', asWritten(block('Administer with authctl #2').text), [
    [/New password: $/, PW.ann],
    [/Repeat the new password: $/, PW.ann],
    [/New password: $/, PW.ann2],
    [/Repeat the new password: $/, PW.ann2],
    [/New password: $/, PW.smoke],
    [/Repeat the new password: $/, PW.smoke],
    [/Password: $/, PW.smoke],
  ])
  t.match(out, /Audit log intact: \d+ events\./)
  for (const step of ['login', 'me', 'refresh', 'logout', 'refresh_after_logout']) t.match(out, new RegExp(`ok\\s+\\d+ ${step}\\b`), `smoke step ${step} passed`)
  t.match(out, /authctl: created a new store in .*\/copy\n/, 'import into ./copy says it made the store')
  t.match(out, /Imported .*\/authd\.export into .*\/copy: 3 users, /, 'admin, ann and the smoke user (bob was removed)')

  // the blocks of "Back up and restore" and "Export and import" are run on the VM: the walk's
  // daemon becomes the VM's, started as `systemctl enable --now authd` (Deploy step 3) starts it
  t.equal(await stopDaemon(daemon, 'SIGINT'), 0, 'Ctrl-C stops the Quick start\'s authd with exit 0')
  daemon = await startDaemon('the VM\'s authd', unitCommand, places.lib, { ...unitEnv, ...vmEnv })

  // Back up and restore #1: the directory, for the authd user only, and a backup into it
  out = await onVm('Back up and restore #1')
  t.match(out, /Backed up the store to .*\/var\/backups\/authd\/authd-\d{4}-\d\d-\d\d\.mdb/)
  t.equal(statSync(places.backups).mode & 0o777, 0o700, 'the backup directory opens for its owner only')
  const made = readdirSync(places.backups)
  t.match(made, [/^authd-\d{4}-\d\d-\d\d\.mdb$/], 'one backup, named by the day')
  t.equal(statSync(join(places.backups, made[0]!)).mode & 0o777, 0o600, 'readable by its owner only')
  // a change after the backup, which the restore takes back
  out = await inTerminal('a user added after the backup', `printf '%s\\n' '${PW.ann}' | authctl user add late@example.com --password-stdin`)

  // Back up and restore #2 restores the backup of a day in the past: here that is the one just made
  const restored = / \/var\/backups\/authd\/(authd-\d{4}-\d\d-\d\d\.mdb) /.exec(block('Back up and restore #2').text)?.[1]
  t.ok(restored, 'the restore names a backup in /var/backups/authd')
  copyFileSync(join(places.backups, made[0]!), join(places.backups, restored!))
  out = await onVm('Back up and restore #2', [[/Password: $/, PW.smoke]])
  for (const step of ['login', 'me', 'refresh', 'logout', 'refresh_after_logout']) t.match(out, new RegExp(`ok\\s+\\d+ ${step}\\b`), `after the restore, smoke step ${step} passed`)
  t.equal(statSync(places.lib).mode & 0o777, 0o700, 'the restored data directory opens for its owner only')
  t.equal(statSync(join(places.lib, 'data.mdb')).mode & 0o777, 0o600)
  t.ok(existsSync(join(`${places.lib}.before-restore`, 'data.mdb')), 'the store before the restore is kept beside it')
  out = await inTerminal('the users after the restore', 'authctl user list')
  t.match(out, /smoke@example\.com/)
  t.notMatch(out, /late@example\.com/, 'the store is the backup: the user added after it is gone')

  // Export and import #1 moves the store to PostgreSQL: the walk's own throwaway server
  const pgBin = findPgBin()
  const pgServer = 'missing' in pgBin ? null : await ownPgServer(t)
  if (pgServer === null) {
    const why = `Export and import #1 and Several instances on PostgreSQL #1 did not run: ${'missing' in pgBin ? pgBin.missing : ''}`
    if (process.env.TEST_REQUIRE_POSTGRES === '1') t.fail(why)
    else t.comment(why)
  } else {
    // step 2's "new, empty database", made as "Several instances on PostgreSQL" makes one (that
    // block runs below, in its place)
    const admin = new pg.Client({ connectionString: pgServer.url() })
    await admin.connect()
    await admin.query('CREATE DATABASE authd_moved')
    await admin.end()
    const asInstalled = readFileSync(vmConfig, 'utf8')
    out = await onVm('Export and import #1', [[/Password: $/, PW.smoke]], (toml) => {
      // step 2: the config names the new database; its URL's host is the reader's database server, here the walk's
      t.match(toml, /^\[store\]\nbackend = "postgres"\nurl = "postgres:\/\/authd@db\.internal:5432\/authd"$/, 'step 2: the config of the new database')
      const keys = toml.split('\n').slice(1).map((l) => (l.startsWith('url = ') ? `url = "${pgServer.url('authd_moved')}"` : l))
      writeFileSync(vmConfig, asInstalled.replace(/^\[store\]\n/m, `[store]\n${keys.join('\n')}\n`))
    })
    t.match(out, /Exported the store to .*\/var\/backups\/authd\/authd\.export: 3 users, /, 'step 1: the export')
    t.match(out, /Imported .*\/authd\.export into postgres:\/\/\S+\/authd_moved\?\S+: 3 users, /, 'step 3: the import into the new database')
    t.match(daemon.log(), /"backend":"postgres"/, 'authd started on PostgreSQL')
    for (const step of ['login', 'me', 'refresh', 'logout', 'refresh_after_logout']) t.match(out, new RegExp(`ok\\s+\\d+ ${step}\\b`), `on PostgreSQL, smoke step ${step} passed`)
    // going back is store.backend = "lmdb" again: the config as installed
    writeFileSync(vmConfig, asInstalled)
  }
  // the VM's blocks are done: the walk goes on in the Quick start's terminal, with its daemon
  t.equal(await stopDaemon(daemon, 'SIGTERM'), 0)
  daemon = await startDaemon('Quick start #1, again', quickStart, checkout)

  // q once the list has been read (a key before Ink listens would be lost)
  out = await inTerminal('Terminal UI #1', block('Terminal UI #1').text, [[/^ {2}3 users$/m, 'q', false]])
  // the header names the store (its path cut from the left to fit 80 columns)
  t.match(out, /(authd · LMDB \/|…)\S*\/authd\/data {2}/, 'the TUI opened on the Quick start\'s store, and q quit')

  out = await inTerminal('Audit log #1', block('Audit log #1').text)
  t.match(out, /^\{\n {2}"events": \[\n {4}\{\n/m, '--json: the events')
  t.match(out, /Audit log intact: \d+ events\.\n$/, 'the comment of the last line: what audit verify prints')

  // Audit log #2: what `authctl audit list` prints, the README's sample laid out the same
  const sample = block('Audit log #2').text.split('\n')
  out = await inTerminal('Audit log #2 (authctl audit list)', 'authctl audit list --limit 4')
  const printed = out.trimEnd().split('\n')
  t.equal(printed[0], sample[0], 'the header, column for column')
  // an event's first line: seq right-aligned under SEQ, then time, event and user under theirs
  const header = sample[0]!
  const columns = (l: string): number[] => {
    const m = /^( *\d+)  (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)  (\S+ +)(\S+)$/.exec(l)
    return m === null ? [] : [m[1]!.length, m[1]!.length + 2, m[1]!.length + 4 + m[2]!.length, m[1]!.length + 4 + m[2]!.length + m[3]!.length]
  }
  const expected = [header.indexOf('SEQ') + 3, header.indexOf('TIME'), header.indexOf('EVENT'), header.indexOf('USER')]
  const eventLine2 = /^ {9}(api|authctl:\S+)( {2}\S+)*$/
  for (const [name, lines] of [['the README\'s sample', sample.slice(1)], ['printed', printed.slice(1)]] as const) {
    t.ok(lines.length >= 4 && lines.length % 2 === 0, `${name}: two lines per event`)
    for (const [i, l] of lines.entries()) {
      if (i % 2 === 0) t.same(columns(l), expected, `${name}: ${l.trim()}: under the header`)
      else t.match(l, eventLine2, `${name}: ${l.trim()}: the indented second line`)
    }
  }

  // Several instances on PostgreSQL #1, as written: the role and the database, made by the
  // server's postgres user (the libpq variables point at the walk's server); typed: the password twice
  if (pgServer !== null) {
    const sock = new URL(pgServer.url()).searchParams.get('host')!
    const ROLE_PASSWORD = 'the authd role has a long password'
    const text = block('Several instances on PostgreSQL #1').text
    out = await inTerminal('Several instances on PostgreSQL #1', text, [
      [/Enter password for new role: $/, ROLE_PASSWORD],
      [/Enter it again: $/, ROLE_PASSWORD],
    ], { PGHOST: sock, PGUSER: 'postgres' })
    const admin = new pg.Client({ connectionString: pgServer.url() })
    await admin.connect()
    t.teardown(() => admin.end())
    const role = await admin.query('SELECT rolcanlogin AS login, rolsuper AS super, rolpassword IS NOT NULL AS password FROM pg_authid WHERE rolname = $1', ['authd'])
    t.same(role.rows, [{ login: true, super: false, password: true }], 'a role authd that logs in with a password and is no superuser')
    const db = await admin.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', ['authd'])
    t.same(db.rows, [{ owner: 'authd' }], 'a database authd that the role owns')
    // the config every instance gets, its URL's host the walk's server; the password in PGPASSWORD, as the comment says
    const instance = join(home, 'instance.toml')
    writeFileSync(instance, `${commentToml(text).replace('postgres://authd@db.internal:5432/authd', `postgres://authd@localhost/authd?host=${sock}`)}\n`)
    out = await inTerminal('an instance on the new database', `authctl --config ${instance} user list`, [], { PGPASSWORD: ROLE_PASSWORD })
    t.match(out, /^No users\.$/m, 'authctl opens the database as the authd role')
    const inDb = new pg.Client({ connectionString: pgServer.url('authd') })
    await inDb.connect()
    const tables = await inDb.query("SELECT count(*)::int AS n FROM pg_tables WHERE tableowner = 'authd' AND tablename LIKE 'authd\\_%'")
    await inDb.end()
    t.ok(tables.rows[0].n > 0, `and set it up: ${tables.rows[0].n} tables authd_…, owned by the role`)
  }

  // Ctrl-C: the daemon drains and exits 0 (Quick start)
  t.equal(await stopDaemon(daemon, 'SIGINT'), 0, 'Ctrl-C stops authd with exit 0')
})

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
