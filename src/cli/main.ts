/**
 * The authctl command: commander parses, commands/ compute, output prints. Exit codes
 * (README, "Administer with authctl"): 0 success, 1 the operation failed, 2 usage or config error. Errors are
 * one plain sentence on stderr; a stack trace only with --debug.
 *
 * Start-up cost matters (admins type these): this module imports commander and small local
 * modules only. Config, LMDB, argon2 and undici load inside the commands that need them, and
 * Ink/React only for `authctl tui`.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import type { Algorithm } from '../config/types.js'
import { protectDashedIds } from './argv.js'
import type { BaseDeps, CliIo, GlobalOptions, StoreDeps } from './deps.js'
import type { View } from './output.js'
import { version } from '../version.js'
import { auditEventsHelp } from '../core/audit-events.js'
import { isAppError, visible } from '../errors.js'
import { exitCodeOf } from '../exit-codes.js'

// The commands, their dependencies and the printer load when an action runs, not for --help.
const userCmd = () => import('./commands/user.js')
const keysCmd = () => import('./commands/keys.js')
const sessionsCmd = () => import('./commands/sessions.js')
const auditCmd = () => import('./commands/audit.js')
const transferCmd = () => import('./commands/transfer.js')

/** What a command produced: its data, how to show it, and a failure sentence if it did not pass. */
interface Outcome {
  data: unknown
  view: View
  failure: string | null
}

/** A command that printed its own output as it went */
const printed: Outcome = { data: undefined, view: { lines: [] }, failure: null }

const outcome = <T>(data: T, view: (d: T) => View, failure: string | null = null): Outcome => ({ data, view: view(data), failure })

/** Runs authctl; resolves to the exit code. */
export async function main(io: CliIo): Promise<number> {
  let result: Outcome | undefined
  let globals: GlobalOptions = {}

  const program = new Command('authctl')
    .description('Administer authd: users, sessions and signing keys, on the store directly (the daemon may be running or not).')
    .option('--config <file>', 'config file (default: $AUTHD_CONFIG, else ./auth.toml if present)')
    .option('--data <dir>', 'data directory (store.path)')
    .option('--json', 'print one JSON document on stdout')
    .option('--debug', 'print stack traces of unexpected errors')
    .version(`authctl ${version()}`, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // commander's usage errors, as one line like every other error
      outputError: (text, write) => write(`authctl: ${visible(sentence(text.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ')))}\n`),
    })
    .configureHelp({ showGlobalOptions: true })
    .addHelpText(
      'after',
      '\nExit codes: 0 success, 1 the operation failed, 2 usage or config error.\nPasswords are read from a hidden prompt on a terminal, or from standard input with --password-stdin.',
    )

  // Each action stores its Outcome; printing happens once, after parsing.
  const withBase = (run: (deps: BaseDeps, cmd: Command) => Promise<Outcome>) => async (...a: unknown[]) => {
    const cmd = a.at(-1) as Command
    globals = cmd.optsWithGlobals<GlobalOptions>()
    const { createBaseDeps } = await import('./deps.js')
    result = await run(createBaseDeps(io, globals), cmd)
  }
  const withStore =
    (run: (deps: StoreDeps, cmd: Command) => Promise<Outcome>, opts: { create?: boolean; first?: (base: BaseDeps) => Promise<void> } = {}) =>
    async (...a: unknown[]) => {
      const cmd = a.at(-1) as Command
      globals = cmd.optsWithGlobals<GlobalOptions>()
      const { createBaseDeps, openStoreDeps } = await import('./deps.js')
      const base = createBaseDeps(io, globals)
      // what the config alone decides, before the store is opened (its database may be down)
      await opts.first?.(base)
      const deps = await openStoreDeps(base, { create: opts.create === true })
      try {
        result = await run(deps, cmd)
      } finally {
        await deps.close()
      }
    }
  const arg = (cmd: Command, i = 0): string => cmd.processedArgs[i] as string
  const opt = <T>(cmd: Command, name: string): T => cmd.opts()[name] as T

  // user
  const user = program.command('user').description('add, list, show, disable, enable, change the password of, or delete users, or reset their second factor')
  user
    .command('add')
    .description('create a user (asks for the password twice on a terminal)')
    .argument('<email>', 'email address')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(
      withBase(async (d, c) => {
        const [m, { openStoreDeps }] = await Promise.all([userCmd(), import('./deps.js')])
        return outcome(await m.userAdd(d, { email: arg(c), passwordStdin: opt(c, 'passwordStdin') === true }, () => openStoreDeps(d, { create: true })), m.userAddView)
      }),
    )
  user
    .command('list')
    .description('list users: id, email, created, disabled, second factor on or off, live sessions')
    .action(withStore(async (d) => {
        const m = await userCmd()
        return outcome(await m.userList(d), m.userListView)
      }))
  user
    .command('show')
    .description('show one user')
    .argument('<email|id>', 'the user')
    .action(withStore(async (d, c) => {
        const m = await userCmd()
        return outcome(await m.userShow(d, { ref: arg(c) }), m.userShowView)
      }))
  user
    .command('disable')
    .description('disable a user and revoke all its sessions')
    .argument('<email|id>', 'the user')
    .action(withStore(async (d, c) => {
        const m = await userCmd()
        return outcome(await m.userDisable(d, { ref: arg(c) }), m.userDisableView)
      }))
  user
    .command('enable')
    .description('enable a disabled user')
    .argument('<email|id>', 'the user')
    .action(withStore(async (d, c) => {
        const m = await userCmd()
        return outcome(await m.userEnable(d, { ref: arg(c) }), m.userEnableView)
      }))
  user
    .command('passwd')
    .description('set a new password and revoke all the user’s sessions')
    .argument('<email|id>', 'the user')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(withStore(async (d, c) => {
        const m = await userCmd()
        return outcome(await m.userPasswd(d, { ref: arg(c), passwordStdin: opt(c, 'passwordStdin') === true }), m.userPasswdView)
      }))
  user
    .command('rm')
    .description('delete a user and its sessions (asks unless --yes)')
    .argument('<email|id>', 'the user')
    .option('--yes', 'do not ask for confirmation')
    .action(withStore(async (d, c) => {
        const m = await userCmd()
        return outcome(await m.userRm(d, { ref: arg(c), yes: opt(c, 'yes') === true }), m.userRmView)
      }))

  user
    .command('mfa')
    .description('manage a user’s second factor')
    .command('reset')
    .description('turn off a user’s second factor and void its recovery codes, for a user who lost the device; the password alone then signs in (asks unless --yes)')
    .argument('<email|id>', 'the user')
    .option('--yes', 'do not ask for confirmation')
    .action(withStore(async (d, c) => {
        const m = await userCmd()
        return outcome(await m.userMfaReset(d, { ref: arg(c), yes: opt(c, 'yes') === true }), m.userMfaResetView)
      }))

  // keys
  const keys = program.command('keys').description('list, rotate or revoke the token signing keys')
  keys
    .command('list')
    .description('kid, algorithm, state (next, active, retiring, retired), and when it was created, signs from (for a next key, a time to come), was retiring and retired')
    .action(withStore(async (d) => {
        const m = await keysCmd()
        return outcome(await m.keysList(d), m.keysListView)
      }))
  keys
    .command('rotate')
    .description('a new key is published in the JWKS at once and signs from tokens.key_lead later; the previous one keeps verifying until its last token expires')
    .addOption(new Option('--algorithm <alg>', 'algorithm of the new key (default: tokens.algorithm)').choices(['ES256', 'RS256']))
    .option('--now', 'the new key signs at once (verifiers that cache the JWKS may not have it yet)')
    .action(withStore(async (d, c) => {
        const m = await keysCmd()
        return outcome(await m.keysRotate(d, { algorithm: opt<Algorithm | undefined>(c, 'algorithm'), now: opt(c, 'now') === true }), m.keysRotateView)
      }))
  keys
    .command('revoke')
    .description('delete a key at once: tokens signed with it stop verifying; the active key is replaced by a new one first (asks unless --yes)')
    .argument('<kid>', 'the key id')
    .option('--yes', 'do not ask for confirmation')
    .action(
      withStore(async (d, c) => {
        const m = await keysCmd()
        return outcome(await m.keysRevoke(d, { kid: arg(c), yes: opt(c, 'yes') === true }), m.keysRevokeView)
      }),
    )

  // sessions
  const sessions = program.command('sessions').description('list or revoke sessions (refresh tokens and their access tokens)')
  sessions
    .command('list')
    .description('live sessions: id, user, created, last used, expires, ip, user agent')
    .option('--user <email|id>', 'only this user’s sessions')
    .action(withStore(async (d, c) => {
        const m = await sessionsCmd()
        // printed as it is read, while the store is open: the list may be too long to hold
        await m.sessionsListPrint(d, { user: opt(c, 'user') }, { json: globals.json === true, write: io.stdout, drained: io.drained })
        return printed
      }))
  sessions
    .command('revoke')
    .description('revoke one session, every session of a user (--user), or every session (--all --yes)')
    .argument('[session-id]', 'the session to revoke')
    .option('--user <email|id>', 'revoke every session of this user')
    .option('--all', 'revoke every session of every user (only with --yes)')
    .option('--yes', 'required with --all')
    .action(
      withStore(async (d, c) => {
        const m = await sessionsCmd()
        const args = { sessionId: c.processedArgs[0] as string | undefined, user: opt<string | undefined>(c, 'user'), all: opt(c, 'all') === true, yes: opt(c, 'yes') === true }
        return outcome(await m.sessionsRevoke(d, args), m.sessionsRevokeView)
      }),
    )

  // limits
  const limits = program.command('limits').description('clear the login rate limits of an email or an address')
  limits
    .command('clear')
    .description('clear the login limits of an email (from every address) or of an IP address, in every running authd within 1 second')
    .argument('<email|ip>', 'an email address or an IP address')
    .action(withStore(async (d, c) => {
        const m = await import('./commands/limits.js')
        return outcome(await m.limitsClear(d, { target: arg(c) }), m.limitsClearView)
      }))

  // audit
  const audit = program.command('audit').description('read the audit log and check its chain')
  audit
    .command('list')
    .description('audit events, newest first (default 50): seq, time, event, user; then actor, ip, detail, session, user agent')
    .option('--user <email|id>', 'only this user’s events (an email no user has now: the events carrying it)')
    .option('--event <name>', 'only events of this name')
    .option('--since <duration|time>', 'only events since a duration ago (30m, 12h, 7d) or an ISO 8601 time (UTC unless it says)')
    .option('--limit <n>', 'at most this many events (1 to 10000, default 50)')
    .addHelpText('after', () => auditEventsHelp())
    .action(
      withStore(async (d, c) => {
        const m = await auditCmd()
        const doc = await m.auditList(d, { user: opt(c, 'user'), event: opt(c, 'event'), since: opt(c, 'since'), limit: opt(c, 'limit') })
        return { data: m.auditListJson(doc), view: m.auditListView(doc), failure: null }
      }),
    )
  audit
    .command('verify')
    .description('recompute the audit log’s chain: exit 0 if intact, 1 and the first broken event if not')
    .action(withStore(async (d) => {
        const m = await auditCmd()
        const finding = await m.auditVerify(d)
        return outcome(finding, m.auditVerifyView, m.auditVerifyFailure(finding))
      }))

  program
    .command('smoke')
    .description('against a running daemon: login → me → refresh → me → logout → refresh (must fail); exit 0 only if every step passes')
    .requiredOption('--email <email>', 'the account to sign in with (a dedicated test user)')
    .option('--url <url>', 'the daemon’s URL (default: server.public_url, http://<host>:<port>)')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .addOption(new Option('--timeout <ms>', 'per-request timeout in milliseconds').default(5000).argParser(positiveInteger))
    .action(
      withBase(async (d, c) => {
        const { smoke, smokeFailure, smokeView } = await import('./commands/smoke.js')
        const r = await smoke(d, { url: opt(c, 'url'), email: opt(c, 'email'), passwordStdin: opt(c, 'passwordStdin') === true, timeoutMs: opt(c, 'timeout') })
        return outcome(r, smokeView, smokeFailure(r))
      }),
    )

  program
    .command('backup')
    .description('write a consistent, compacted copy of the store to <file> while the daemon runs')
    .argument('<file>', 'the backup file to create (never overwritten)')
    .action(
      withStore(
        async (d, c) => {
          const m = await import('./commands/backup.js')
          return outcome(await m.backup(d, { file: arg(c) }), m.backupView)
        },
        // a PostgreSQL store has no authctl backup (exit 2), whether its database answers or not
        { first: async (b) => void (await import('./commands/backup.js')).refuseWithoutLmdb((await b.config()).store.backend) },
      ),
    )

  program
    .command('export')
    .description('write the whole store (users with their password hashes, sessions, keys, second factors, the audit log) to <file>: UTF-8 JSON, one record per line, created 0600')
    .argument('<file>', 'the file to create (never overwritten)')
    .action(withStore(async (d, c) => {
        const m = await transferCmd()
        return outcome(await m.exportStore(d, { file: arg(c) }), m.exportView)
      }))
  program
    .command('import')
    .description('load a file written by authctl export into an empty store (no users yet), all or nothing; either backend')
    .argument('<file>', 'the export to load')
    .action(
      withBase(async (d, c) => {
        const [m, { openStoreDeps }] = await Promise.all([transferCmd(), import('./deps.js')])
        // an LMDB data directory that does not exist yet is an empty store
        return outcome(await m.importStore(d, { file: arg(c) }, () => openStoreDeps(d, { create: true })), m.importView)
      }),
    )

  program
    .command('version')
    .description('print the version')
    .action(async (...a: unknown[]) => {
      globals = (a.at(-1) as Command).optsWithGlobals<GlobalOptions>()
      result = outcome({ version: version() }, (d) => ({ lines: [`authctl ${d.version}`] }))
    })

  program
    .command('tui')
    .description('the interactive terminal UI: users, sessions, keys and a live smoke test')
    .action(async (...a: unknown[]) => {
      globals = (a.at(-1) as Command).optsWithGlobals<GlobalOptions>()
      // Ink and React load here, and only here: no other command pays their start-up cost
      // Ink draws nothing until exit when it believes it runs under CI (it reads CI and
      // CONTINUOUS_INTEGRATION once, on import); the tui always runs on a real terminal
      delete process.env.CI
      delete process.env.CONTINUOUS_INTEGRATION
      const [{ tuiCommand }, { createBaseDeps }] = await Promise.all([import('./commands/tui.js'), import('./deps.js')])
      await tuiCommand(createBaseDeps(io, globals))
    })

  // every flag defined anywhere in the tree, and those that take a value
  const known = new Set<string>(['--help', '-h'])
  const takesValue = new Set<string>()
  const visit = (cmd: Command): void => {
    for (const o of cmd.options) {
      for (const flag of [o.long, o.short]) {
        if (flag === undefined) continue
        known.add(flag)
        if (o.required || o.optional) takesValue.add(flag)
      }
    }
    cmd.commands.forEach(visit)
  }
  visit(program)

  try {
    await program.parseAsync(protectDashedIds(versionAsCommand(io.argv), known, takesValue), { from: 'user' })
  } catch (err) {
    return fail(io, err, globals.debug === true || io.argv.includes('--debug'))
  }
  if (result === undefined || result === printed) return 0
  const { renderJson, renderView } = await import('./output.js')
  io.stdout(globals.json === true ? renderJson(result.data) : renderView(result.view))
  if (result.failure !== null) {
    io.stderr(`authctl: ${visible(result.failure)}\n`)
    return 1
  }
  return 0
}

/**
 * `authctl --version --json` as `authctl version --json`: commander's own --version prints its
 * line and nothing else, where --json promises one JSON document. Only when --version is all that
 * is asked (besides the global options).
 */
function versionAsCommand(argv: readonly string[]): string[] {
  if (!argv.includes('--json')) return [...argv]
  const rest: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--json' || a === '--debug' || /^--(?:config|data)=/.test(a)) continue
    if (a === '--config' || a === '--data') {
      i++
      continue
    }
    rest.push(a)
  }
  if (rest.length !== 1 || (rest[0] !== '--version' && rest[0] !== '-V')) return [...argv]
  return argv.map((a) => (a === rest[0] ? 'version' : a))
}

function positiveInteger(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidArgumentError('Give a positive whole number of milliseconds.')
  }
  return n
}

/** The single place errors become exit codes and stderr sentences. */
function fail(io: CliIo, err: unknown, debug: boolean): number {
  // commander has already written its own one-line message (or the help)
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
  const e = err as { message?: unknown; stack?: unknown } | null
  // one line, and nothing in it a terminal would act on or hide (the message may hold what was typed)
  const message = typeof e?.message === 'string' && e.message !== '' ? visible(sentence(e.message)) : 'Unexpected error.'
  // every deliberate error is an AppError; anything else is unexpected and says so, in the same single line
  const deliberate = isAppError(err)
  io.stderr(`authctl: ${message}${deliberate || debug ? '' : ' (run with --debug for details)'}\n`)
  if (debug && typeof e?.stack === 'string') io.stderr(`${e.stack}\n`)
  return deliberate ? exitCodeOf(err.code) : 1
}

const sentence = (m: string): string => {
  const one = m.split('\n')[0]!.trim()
  const capital = one.charAt(0).toUpperCase() + one.slice(1)
  return /[.!?]$/.test(capital) ? capital : `${capital}.`
}
