/**
 * Every fenced code block of the README, and what runs it. The blocks are found in the README
 * itself, each named by its nearest heading and its place under it ("Quick start #2"); INVENTORY
 * says what runs each one, and a block that is added, removed or moved fails the first test until
 * INVENTORY names what runs it.
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
 * A block written for a VM as root (`sudo -u authd authctl --config /etc/authd/auth.toml …`) runs
 * in the walk with `sudo -u authd ` dropped, /etc/authd/auth.toml read as config/auth.toml and its
 * store.path as the walk's ./data (AUTHD_DATA). Blocks that need systemd, apt, a proxy or a
 * PostgreSQL server as root are run by the deploy tests (test/deploy/) as far as a test can, or
 * by the test named in INVENTORY.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Secret, TOTP } from 'otpauth'
import t, { type Test } from 'tap'
import { AUTHD_BIN, ROOT } from './helpers/app.js'
import { freePort } from './helpers/daemon.js'
import { installed } from './deploy/files.js'

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
// the walk starts some sixty authctl and curl processes one after the other: on a loaded 2-core
// machine that takes minutes, more than tap's default per file
t.setTimeout(600_000)

interface Block {
  id: string
  lang: string
  text: string
  /** line of the opening fence in README.md */
  line: number
}

/** the README's fenced blocks, each named by its nearest heading and its place under it */
function readmeBlocks(md: string): Block[] {
  const lines = md.split('\n')
  const out: Block[] = []
  const seen = new Map<string, number>()
  let heading = '(top)'
  for (let i = 0; i < lines.length; i++) {
    const h = /^#{1,6} (.+)$/.exec(lines[i]!)
    if (h !== null) heading = h[1]!.trim()
    const fence = /^```(\w*)$/.exec(lines[i]!)
    if (fence === null) continue
    let end = i + 1
    while (end < lines.length && lines[end] !== '```') end++
    const n = (seen.get(heading) ?? 0) + 1
    seen.set(heading, n)
    out.push({ id: `${heading} #${n}`, lang: fence[1]!, text: lines.slice(i + 1, end).join('\n'), line: i + 1 })
    i = end
  }
  return out
}

/** How a block is run */
type Runner =
  /** run in the walk below, as written */
  | { walk: true }
  /** run in the walk as a VM admin's block (`sudo -u authd` dropped, the VM config read as config/auth.toml) */
  | { vm: true }
  /** a terminal screen or printed output, compared in the walk with what the command prints */
  | { output: string }
  /** run by another test, which finds it in the README itself */
  | { by: string[]; why: string }
  /** TOML in the block's comments, validated by `authd check-config` (below); the shell lines need root */
  | { toml: true; by: string[]; why: string }
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
  { id: 'Back up and restore #1', first: 'sudo install -d -m 0700 -o authd -g authd /var/backups/authd', run: { by: ['test/cli/backup.test.ts', DEPLOY], why: 'root: backup and restore as the README does it, on a temp store' } },
  { id: 'Back up and restore #2', first: 'sudo systemctl stop authd', run: { by: ['test/cli/backup.test.ts', DEPLOY], why: 'systemd: the restore (data.mdb put back) and a login on it' } },
  { id: 'Export and import #1', first: '# 1. on the VM: stop authd', run: { toml: true, by: ['test/cli/export-import.test.ts'], why: 'systemd and PostgreSQL: export, import into a new store, tokens keep working' } },
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
  { id: 'Deploy on a VM #3', first: 'sudo install -m 0644 "$(npm root -g)/authd/config/authd.service"', run: { by: [DEPLOY, 'test/deploy/systemd.test.ts'], why: 'systemd: the unit checked, authd run as it runs it, readyz as written' } },
  { id: 'Deploy on a VM #4', first: 'sudo apt-get install -y caddy', run: { by: ['test/deploy/proxy.test.ts'], why: 'a proxy as root: the Caddyfile checked against config/auth.toml' } },
  { id: 'Deploy on a VM #5', first: 'sudo apt-get install -y nginx', run: { by: ['test/deploy/proxy.test.ts'], why: 'a proxy as root: nginx.conf checked (nginx -t where installed)' } },
  { id: 'Deploy on a VM #6', first: 'sudo -u authd authctl --config /etc/authd/auth.toml user add admin@example.com', run: { by: [DEPLOY], why: 'these two lines, as the authd user would run them, through a relay to the socket' } },
  { id: 'Deploy on a VM #7', first: 'journalctl -u authd -f', run: { by: [DEPLOY, 'test/deploy/observability.test.ts'], why: 'the journal is systemd\'s; the metrics are served on the socket' } },
  { id: 'Several instances on PostgreSQL #1', first: 'sudo -u postgres createuser --pwprompt authd', run: { toml: true, by: ['test/helpers/pg.ts'], why: 'createuser/createdb need a PostgreSQL server as root; the tests make their databases as pg.ts does' } },
  { id: 'Development #1', first: 'npm ci              # install and build (dist/)', run: { by: ['.ci/run'], why: 'the suite itself: .ci/run runs npm ci, npm test and npm run test:slow' } },
]

const blocks = readmeBlocks(readme)
const block = (id: string): Block => {
  const b = blocks.find((x) => x.id === id)
  if (b === undefined) throw new Error(`README.md has no block ${id}`)
  return b
}

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
  for (const entry of INVENTORY.filter((e) => 'toml' in e.run)) {
    // the comment lines indented under "auth.toml …" / "point the config at …": `#   [store]`
    const toml = block(entry.id)
      .text.split('\n')
      .filter((l) => /^#\s{2,}\S/.test(l))
      .map((l) => l.replace(/^#\s+/, '').replace(/\s+#.*$/, ''))
      .join('\n')
    t.match(toml, /\[store\]\nbackend = "postgres"\nurl = "postgres:\/\/[^"]+"/, `${entry.id}: its TOML`)
    const dir = t.testdir({ 'auth.toml': `${toml}\n` })
    const r = await run(process.execPath, [AUTHD_BIN, 'check-config', '--config', join(dir, 'auth.toml')], { cwd: dir, env: { PATH: process.env.PATH!, HOME: process.env.HOME! } })
    t.equal(r.code, 0, `${entry.id}: check-config takes it: ${r.stderr}`)
    t.match(r.stdout, /backend = "postgres"/)
  }
})

t.test('the Development block is what .ci/run and package.json run', async (t) => {
  const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8')
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
  for (const line of block('Development #1').text.split('\n')) {
    const cmd = line.replace(/\s+#.*$/, '').trim()
    const script = /^npm (?:run )?(\S+)$/.exec(cmd)?.[1]
    t.ok(script === 'ci' || script! in scripts, `${cmd}: npm has it`)
    if (cmd !== 'npm run build') t.match(ci, new RegExp(`^(?:npm|.*\\bnpm) ${cmd.slice(4).replace(/ /g, ' ')}\\b`, 'm'), `${cmd}: .ci/run runs it`)
  }
})

/** One process to its end: exit code and outputs */
function run(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string>; input?: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => p.kill('SIGKILL'), 60_000)
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
  const env: Record<string, string> = { PATH: process.env.PATH!, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8', AUTHD_SERVER_PORT: String(port) }
  const asWritten = (text: string): string => text.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)

  // Quick start, line 1, without its `npm ci` (done by .ci/run); Ctrl-C at the end
  const [first, second] = block('Quick start #1').text.split('\n').map((l) => l.replace(/\s+#.*$/, ''))
  t.match(first, /^npm ci && /)
  t.equal(second!.trim(), 'npm test', 'the second command is the suite (.ci/run runs it)')
  const daemon = spawn('bash', ['-c', first!.replace(/^npm ci && /, '')], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let log = ''
  daemon.stdout.on('data', (c: Buffer) => (log += c.toString()))
  daemon.stderr.on('data', (c: Buffer) => (log += c.toString()))
  const exited = new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (daemon.exitCode === null && daemon.signalCode === null) process.kill(-daemon.pid!, 'SIGKILL')
  })
  for (let i = 0; i < 600 && !log.includes('authd listening on') && daemon.exitCode === null; i++) await sleep(50)
  t.match(log, `authd listening on http://127.0.0.1:${port}`, `authd start --dev serves (${log.slice(0, 2000)})`)

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

  // a VM admin's line: `sudo -u authd` dropped, the VM's config is config/auth.toml on the walk's store
  const vm = block('Administer with authctl #1').text.replace(/^sudo -u authd /gm, '').replaceAll('/etc/authd/auth.toml', join(ROOT, 'config', 'auth.toml'))
  out = await inTerminal('Administer with authctl #1', vm, [], { AUTHD_DATA: join(checkout, 'data') })
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

  // Ctrl-C: the daemon drains and exits 0 (Quick start)
  process.kill(-daemon.pid!, 'SIGINT')
  t.equal(await exited, 0, 'Ctrl-C stops authd with exit 0')
})

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
