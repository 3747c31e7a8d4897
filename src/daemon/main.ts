/**
 * The authd command. Reads argv and the environment, sets exit codes, handles signals; everything
 * else is a plain function it calls.
 */
import { Command, CommanderError } from 'commander'
import { stringify } from 'smol-toml'
import type { Logger } from 'pino'
import { loadConfig, type ConfigFlags } from '../config/load.js'
import { describeConfig } from '../config/describe.js'
import { derivePublicUrl } from '../config/defaults.js'
import type { Config } from '../config/types.js'
import { loadJwt } from '../core/access-tokens.js'
import { newDeviceKey } from '../core/device-cookies.js'
import type { Handler } from '../http/app.js'
import { createLogger, flushLogSync } from './logger.js'
import { createServices } from './services.js'
import { lockDataDir } from './data-lock.js'
import { listen, listenFailure } from './server.js'
import { version } from '../version.js'
import { isAppError } from '../errors.js'
import { exitCodeOf } from '../exit-codes.js'

interface Io {
  argv: string[]
  env: Record<string, string | undefined>
  cwd: string
  stdout: (s: string) => void
  stderr: (s: string) => void
}

/** Runs authd; resolves to the exit code (start resolves only once the daemon has stopped). */
export async function main(io: Io): Promise<number> {
  let code = 0
  const program = new Command('authd')
    .description('authd: a small self-hosted authentication daemon')
    .version(`authd ${version()}`, '-V, --version', 'print the version')
    .option('--debug', 'print stack traces of unexpected errors')
    .exitOverride()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // the parser's usage errors, as one line like every other error of authd
      outputError: (text, write) => write(`authd: ${text.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ').trim()}\n`),
    })
    .showHelpAfterError(false)

  const configOptions = (cmd: Command): Command =>
    cmd.option('--config <file>', 'config file (default: $AUTHD_CONFIG, else ./auth.toml if present)').option('--data <dir>', 'data directory (store.path)')

  configOptions(program.command('start').description('run the HTTP daemon in the foreground'))
    .option('--host <host>', 'listen address (server.host)')
    .option('--port <port>', 'listen port (server.port); 0 picks a free port')
    .option('--dev', 'laptop mode on plain HTTP: cookie not Secure and without the __Host- prefix, pretty logs')
    .action(async (opts: ConfigFlags) => {
      code = await start(io, opts)
    })

  configOptions(program.command('check-config').description('validate the config and print the effective values'))
    .option('--dev', 'check the --dev defaults')
    .action((opts: ConfigFlags) => {
      const { config, file } = loadConfig({ flags: opts, env: io.env, cwd: io.cwd })
      io.stdout(`# effective config (${file === null ? 'no config file; defaults and environment' : `from ${file}, defaults and environment`})\n`)
      io.stdout(stringify(describeConfig(config)) + '\n')
    })

  program
    .command('version')
    .description('print the version')
    .action(() => io.stdout(`authd ${version()}\n`))

  try {
    await program.parseAsync(io.argv, { from: 'user' })
    return code
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
    // the exit code of a deliberate error is the one table's (src/exit-codes.ts, shared with
    // authctl): 2 for a config error (a bad key or value, a file where the data directory should
    // be, a store written by a newer authd), whose sentence says what to fix even with --debug
    const exit = isAppError(err) ? exitCodeOf(err.code) : 1
    const debug = io.argv.includes('--debug') && exit !== 2
    io.stderr(`authd: ${debug && err instanceof Error ? err.stack : err instanceof Error ? err.message : String(err)}\n`)
    return exit
  }
}

async function start(io: Io, flags: ConfigFlags): Promise<number> {
  const { config, file } = loadConfig({ flags, env: io.env, cwd: io.cwd })
  const log = config.dev ? await devLogger(config) : createLogger({ level: config.log.level })
  // what the log has gathered is written at exit, also by process.exit (an uncaught exception)
  process.once('exit', () => flushLogSync(log))
  const services = await createServices(config, { logger: log })
  // before it listens: a second authd on an LMDB directory (which it has opened only as authctl
  // would) is refused; the lock's name needs the store's secret, which only its owner can read
  const lock =
    config.store.backend === 'lmdb'
      ? await services.store.ensureDeviceKey(newDeviceKey).then((secret) => lockDataDir(config.store.path, secret)).catch(async (err: unknown) => {
          await services.close()
          throw err
        })
      : null
  const socket = config.server.socket
  const at = socket !== null ? { socket } : { host: config.server.host, port: config.server.port }
  // the default public URL of --port 0 names the port actually chosen: the app is built with it
  const ownUrl = socket === null && config.server.port === 0 && config.server.publicUrl === derivePublicUrl(config.server.host, 0)
  const handlerFor = (port: number): Handler =>
    ownUrl ? services.app({ ...config, server: { ...config.server, publicUrl: derivePublicUrl(config.server.host, port) } }) : services.handler
  // SIGTERM and SIGINT are heard from before the listening line: one sent the moment that line
  // appears (a supervisor, a script) drains and exits 0 like any other, rather than killing
  const signalled = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'))
    process.once('SIGINT', () => resolve('SIGINT'))
    // a terminal's hangup (an ssh session that drops under a foreground authd): drained too
    process.once('SIGHUP', () => resolve('SIGHUP'))
  })
  const running = await listen(services, at, handlerFor).catch(async (err: unknown) => {
    await services.close()
    throw listenFailure(err, at)
  })
  // the store as people read it: a URL's password is shown as ***
  const store = { backend: services.store.backend, location: services.store.location }
  if (socket !== null) log.info({ event: 'listening', socket, store, config: file, dev: config.dev }, `authd listening on ${running.url}`)
  else log.info({ event: 'listening', url: running.url, port: running.port, store, config: file, dev: config.dev }, `authd listening on ${running.url}`)
  // not left to the next batch of lines: whoever waits for this line (a supervisor, a script
  // reading the port chosen by --port 0) sees it at once
  log.flush()
  // jsonwebtoken (a sixth of start-up) is loaded now, synchronously: no request is read before
  // it is there, and whoever waits for the line above is not kept waiting for it
  loadJwt()

  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception')
    process.exit(1)
  })
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'))

  const signal = await signalled
  log.info({ event: 'stopping', signal }, 'draining in-flight requests')
  await running.stop(10_000)
  await lock?.release()
  log.info({ event: 'stopped' }, 'authd stopped')
  log.flush()
  return 0
}

async function devLogger(config: Config): Promise<Logger> {
  const { default: pretty } = await import('pino-pretty')
  return createLogger({ level: config.log.level, destination: pretty({ colorize: process.stdout.isTTY, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname,service' }) })
}
