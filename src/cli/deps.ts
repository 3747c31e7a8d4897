/**
 * What authctl's commands run on, built on demand: the config, the store the config names (LMDB
 * or PostgreSQL, store/open.ts), the admin operations, and the prompts. Each piece is imported
 * only when a command needs it, so `authctl --help` loads neither a store nor argon2.
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config/types.js'
import type { Admin } from '../core/admin.js'
import type { Store } from '../store/store.js'
import { createConfirm, type Confirm } from './confirm.js'
import { AppError } from '../errors.js'
import { processPasswordIo, readNewPassword, readPassword } from './password-input.js'

/** authctl's own process surroundings (no process.* below main) */
export interface CliIo {
  argv: string[]
  env: Record<string, string | undefined>
  cwd: string
  /** false: the text is queued, not yet taken (a slow pipe); wait for `drained` before more */
  stdout: (s: string) => boolean | void
  stderr: (s: string) => void
  /** resolves once stdout has taken everything queued (absent: writes are never queued) */
  drained?: () => Promise<void>
}

/** options every authctl command takes */
export interface GlobalOptions {
  config?: string
  data?: string
  json?: boolean
  debug?: boolean
}

export interface BaseDeps {
  cwd: string
  now: () => number
  config(): Promise<Config>
  /** a password for signing in (smoke): stdin or one hidden prompt */
  password(passwordStdin: boolean): Promise<string>
  /** a new password (add, passwd): stdin or two hidden prompts */
  newPassword(passwordStdin: boolean): Promise<string>
  /** one line for the admin on stderr, beside the command's output (stdout stays pure JSON with --json) */
  notice(text: string): void
}

export interface StoreDeps extends BaseDeps {
  store: Store
  admin: Admin
  confirm: Confirm
}

export function createBaseDeps(io: CliIo, globals: GlobalOptions): BaseDeps {
  let config: Promise<Config> | undefined
  return {
    cwd: io.cwd,
    now: Date.now,
    config() {
      config ??= import('../config/load.js').then(
        ({ loadConfig }) => loadConfig({ flags: { config: globals.config, data: globals.data }, env: io.env, cwd: io.cwd }).config,
      )
      return config
    },
    password: (passwordStdin) => readPassword({ passwordStdin }),
    newPassword: (passwordStdin) => readNewPassword({ passwordStdin }),
    notice: (text) => io.stderr(`authctl: ${text}\n`),
  }
}

/**
 * Opens the store named by the config. An LMDB data directory that does not exist is refused (a
 * typo in --data must not quietly create an empty store) unless `create` is set: `user add` may
 * make the first user before authd ever ran; a store it creates is named on stderr (README,
 * "Administer with authctl"), so the admin sees where the data went. Without `create`, an
 * existing directory with other files in it and no store is refused too; an empty one is opened.
 */
export async function openStoreDeps(base: BaseDeps, opts: { create: boolean }): Promise<StoreDeps & { close(): Promise<void> }> {
  const config = await base.config()
  const path = config.store.path
  let created = false
  if (config.store.backend === 'lmdb') {
    if (fileInTheWay(path)) {
      // the sentence authd gives for it; a usage error: --data or store.path names the wrong thing
      throw new AppError('DATA_DIR_NOT_DIRECTORY', { params: { path } })
    }
    if (!opts.create && !(existsSync(path) && statSync(path).isDirectory())) {
      throw new AppError('NO_DATA_DIR', { params: { path } })
    }
    created = makesNewStore(config)
    // a directory of other things (a path one level off, /etc/authd): not made a store by a
    // command that only reads or changes one; an empty one is a store not yet started
    if (created && !opts.create && holdsOtherFiles(path)) throw new AppError('NO_STORE_IN_DIR', { params: { path } })
  }
  const [{ openStore }, { createAdmin, lazyPasswordTools }] = await Promise.all([import('../store/open.js'), import('../core/admin.js')])
  const { store } = await openStore(config.store)
  if (created) base.notice(`created a new store in ${path}`)
  const admin = createAdmin({ store, config, now: base.now, passwords: lazyPasswordTools(config) })
  return {
    ...base,
    store,
    admin,
    confirm: createConfirm(processPasswordIo()),
    close: () => store.close(),
  }
}

/** whether opening the store `config` names makes a new, empty one: LMDB keeps a store in data.mdb */
export const makesNewStore = (config: Config): boolean => config.store.backend === 'lmdb' && !existsSync(join(config.store.path, 'data.mdb'))

/**
 * whether the directory at `path` holds files that are not a store's: LMDB's lock file alone (a
 * store's remains) is for LMDB to judge, a new filesystem's lost+found is no file of anyone's, and
 * a directory that cannot be read (another user's, 0700) is for the store's opening to name
 */
function holdsOtherFiles(path: string): boolean {
  try {
    return readdirSync(path).some((name) => name !== 'lock.mdb' && name !== 'lost+found')
  } catch {
    return false
  }
}

/** whether `path`, or a directory it would sit in, is a file (not a directory) */
function fileInTheWay(path: string): boolean {
  try {
    return !statSync(path).isDirectory()
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOTDIR'
  }
}
