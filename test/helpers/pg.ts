/**
 * Throwaway PostgreSQL for tests (README, "Development"). One server is shared by every test
 * file of a run and stopped after it (pg-server.mjs); each test gets its own database in it,
 * cloned from an empty template in about 0.1 s and dropped when the test ends. A test that stops
 * and starts the server (an outage) gets a private one instead.
 *
 * Where the PostgreSQL server binaries (15 or newer) are missing, both answer null and the test
 * is skipped with one line saying how to install them; with TEST_REQUIRE_POSTGRES=1 (CI) the
 * test fails instead. So a PostgreSQL test starts with
 *
 *   const db = await pgDatabase(t)
 *   if (!db) return
 *
 * Close what you open on the database in a teardown registered after the call (teardowns run
 * newest first, so it runs before the database is dropped).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { Test } from 'tap'
import {
  attachShared,
  destroyServerSync,
  findPgBin,
  initServer,
  INSTALL_HINT,
  pgUrl,
  startServer,
  stopServer,
  TEMPLATE,
  type PgBin,
} from './pg-server.mjs'

export interface PgDatabase {
  /** postgres://postgres@localhost/<database>?host=<socket directory> */
  url: string
  /** the server's socket directory (pg's `host`) */
  host: string
  database: string
}

export interface OwnPgServer {
  /** a database's URL on this server (default `postgres`, which always exists) */
  url(database?: string): string
  /** stops the server (open connections end): everything against it fails until start() */
  stop(): Promise<void>
  /** starts it again, with its data as it was; resolves once it accepts connections */
  start(): Promise<void>
  /**
   * A role `role` that signs in with `password` (SCRAM, as a production server asks) and a
   * database of the same name it owns; the server's own `postgres` stays trusted.
   */
  roleWithPassword(role: string, password: string): Promise<void>
}

/** The server binaries, or null with `t` skipped (failed under TEST_REQUIRE_POSTGRES=1). */
function serverFor(t: Test): PgBin | null {
  const found = findPgBin()
  if (!('missing' in found)) return found
  if (process.env.TEST_REQUIRE_POSTGRES === '1') {
    t.fail(`${found.missing.split(':')[0]}, and TEST_REQUIRE_POSTGRES=1 requires them (install them: ${INSTALL_HINT})`)
  } else {
    t.plan(0, found.missing)
  }
  return null
}

let shared: Promise<{ sock: string; admin: pg.Pool }> | undefined
let count = 0

/** a fresh database for this test on the shared server, dropped when `t` ends */
export async function pgDatabase(t: Test): Promise<PgDatabase | null> {
  const server = serverFor(t)
  if (!server) return null
  shared ??= attachShared(server).then((sock) => {
    const admin = new pg.Pool({ host: sock, user: 'postgres', database: 'postgres', max: 2, allowExitOnIdle: true })
    admin.on('error', () => {})
    return { sock, admin }
  })
  const { sock, admin } = await shared
  const database = `authd_test_${process.pid}_${++count}`
  await admin.query(`CREATE DATABASE ${database} TEMPLATE ${TEMPLATE}`)
  // FORCE: connections the test left open end with it
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  })
  return { url: pgUrl(sock, database), host: sock, database }
}

const KEEPER = fileURLToPath(new URL('./pg-keeper.mjs', import.meta.url))

/** a private server for this test (about 1 s to create), stopped and removed when `t` ends */
export async function ownPgServer(t: Test): Promise<OwnPgServer | null> {
  const server = serverFor(t)
  if (!server) return null
  const dir = mkdtempSync(join(tmpdir(), 'authd-test-pg-own-'))
  // removes the server should this process die before its teardown
  spawn(process.execPath, [KEEPER, 'watch', String(process.pid), dir, server.bin], { detached: true, stdio: 'ignore' }).unref()
  t.teardown(() => destroyServerSync(server, dir))
  const sock = await initServer(server, dir)
  return {
    url: (database = 'postgres') => pgUrl(sock, database),
    stop: () => stopServer(server, dir, 'fast'),
    start: () => startServer(server, dir),
    async roleWithPassword(role, password) {
      const hba = join(dir, 'data', 'pg_hba.conf')
      writeFileSync(hba, `local all ${role} scram-sha-256\n${readFileSync(hba, 'utf8')}`)
      const admin = new pg.Client({ host: sock, user: 'postgres', database: 'postgres' })
      await admin.connect()
      try {
        await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password.replaceAll("'", "''")}'`)
        await admin.query(`CREATE DATABASE ${role} OWNER ${role}`)
        await admin.query('SELECT pg_reload_conf()')
      } finally {
        await admin.end()
      }
    },
  }
}
