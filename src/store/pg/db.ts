/**
 * The PostgreSQL store's connection layer: one pool, every operation under a deadline, every
 * failure to reach the database turned into an AppError STORE_UNAVAILABLE (HTTP 503), and a
 * server that comes back picked up by itself (the pool opens new connections on demand). Nothing
 * here knows the schema.
 */
import { createHash } from 'node:crypto'
import pg from 'pg'
import pgpass from 'pgpass'
import { AppError, isStoreUnavailable } from '../../errors.js'

export interface DbOptions {
  url: string
  poolSize: number
  /** per statement (the server cancels it) and, plus a margin, per operation (the client gives up) */
  queryTimeoutMs: number
  log?: { warn(obj: object, msg: string): void }
}

/** What runs statements: a transaction's connection, or the pool for one statement on its own. */
export interface Sql {
  query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<R[]>
}

/** a connection of one's own (Db.lease) */
export interface Leased extends Sql {
  /** runs a script of several statements (the migrations) */
  script(text: string): Promise<void>
  /** gives the connection back; after a failure (`err`) it is ended instead, whatever it was in */
  release(err?: unknown): void
}

export interface Db extends Sql {
  /**
   * Runs `fn` inside BEGIN … COMMIT on one connection, the whole within the deadline. A deadlock
   * or serialization failure runs it again (a few times); `fn` must not have effects outside the
   * transaction.
   */
  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T>
  /**
   * A connection of its own for a long walk (export, import, the migrations): each statement
   * under the deadline (or `deadlineMs`), not the whole. `release` must be called.
   */
  lease(opts?: { deadlineMs?: number }): Promise<Leased>
  end(): Promise<void>
}

// SQLSTATE classes and codes that mean "the database cannot answer now", not "the statement is
// wrong". A table or schema that is not there (42P01, 3F000) is a database without authd's
// schema: one being restored, or a failover to a node without it. (A function that is not there,
// 42883, is left a statement's error: it is also what a wrong argument type in our own SQL gives.)
const UNAVAILABLE_CLASSES = ['08', '53', '57', '58']
const UNAVAILABLE_CODES = new Set(['25006', '55P03', '40001', '40P01', '28000', '28P01', '3D000', '42P01', '3F000'])
// errno codes of a socket that cannot reach the server
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNABORTED'])
// what node-postgres says when a connection ends under it or cannot be had
const CONNECTION_MESSAGE = /connection terminated|not queryable|timeout exceeded when trying to connect|query read timeout|connection error/i

/** retried at once: another transaction won a race that the database broke off to avoid a deadlock */
const RETRY_CODES = new Set(['40001', '40P01'])
const RETRIES = 4

export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** the database cannot be reached: `detail` is for logs and authctl; a client gets 503 `Service unavailable` */
const unavailableError = (detail: string): AppError => new AppError('STORE_UNAVAILABLE', { message: detail })

export function isUnavailable(err: unknown): boolean {
  if (isStoreUnavailable(err)) return true
  const code = sqlState(err)
  if (code !== undefined) {
    if (SOCKET_CODES.has(code) || UNAVAILABLE_CODES.has(code)) return true
    if (code.length === 5 && UNAVAILABLE_CLASSES.includes(code.slice(0, 2))) return true
  }
  return err instanceof Error && CONNECTION_MESSAGE.test(err.message)
}

/** the error a caller sees: STORE_UNAVAILABLE for an unreachable or failing database, else `err` */
export function storeError(err: unknown): unknown {
  if (isStoreUnavailable(err) || !isUnavailable(err)) return err
  const e = unavailableError(`the database is unavailable: ${(err as Error).message}`)
  ;(e as Error & { cause?: unknown }).cause = err
  return e
}

// bigint (int8) columns as numbers: every int8 here is a time in ms or µs, a count or a seq
const INT8 = 20
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8) return (v: string) => Number(v)
    return pg.types.getTypeParser(oid, format ?? 'text')
  }) as typeof pg.types.getTypeParser,
}

/**
 * Named (prepared) statements per query text: parsed and planned once per connection. Only for
 * texts from a fixed set (every query here is one, or one of a few variants).
 */
const names = new Map<string, string>()
function named(text: string): string {
  let name = names.get(text)
  if (name === undefined) {
    name = 'authd_' + createHash('sha256').update(text).digest('hex').slice(0, 24)
    names.set(text, name)
  }
  return name
}

/** ends a connection at once, even one whose server no longer answers */
function destroy(client: pg.PoolClient, err: Error): void {
  try {
    client.release(err)
  } catch {
    // released already
  }
  ;(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

/**
 * The password of a connection whose URL and PGPASSWORD give none, asked for only when the server
 * wants one: ~/.pgpass (PGPASSFILE), as libpq reads it, else a sentence that says where to put
 * it (node-postgres would send no password and fail on a message of its own).
 */
function fromPgpass(params: object): Promise<string> {
  return new Promise((resolve, reject) => {
    pgpass(params, (found) => {
      if (found !== undefined) resolve(found)
      else reject(unavailableError('the database asks for a password and none is given: put it in store.url, PGPASSWORD or ~/.pgpass'))
    })
  })
}

/**
 * pg's Client, with two changes: a connection that fails while being made is ended at once (one
 * the server still waits on, as after a password the client could not give, would otherwise keep
 * the process alive until the server's authentication_timeout, a minute), and ~/.pgpass is read
 * here rather than by pg, which warns on stderr that it will stop (stderr is the journal's).
 */
function AuthdClient(config: pg.ClientConfig): pg.Client {
  const client = new pg.Client(config)
  const own = client as unknown as { password: unknown; connection?: { stream?: { destroy(): void } } }
  if (own.password === null || own.password === undefined) own.password = fromPgpass
  const connect = client.connect.bind(client) as (cb: (err?: Error) => void) => void
  ;(client as unknown as { connect: (cb?: (err?: Error) => void) => unknown }).connect = (cb) => {
    const ended = (err?: Error): void => {
      if (err) own.connection?.stream?.destroy()
    }
    if (cb !== undefined) {
      connect((err) => {
        ended(err)
        cb(err)
      })
      return undefined
    }
    return new Promise<void>((resolve, reject) =>
      connect((err) => {
        ended(err)
        if (err) reject(err)
        else resolve()
      }),
    )
  }
  return client
}

export function openDb(opts: DbOptions): Db {
  const deadlineMs = opts.queryTimeoutMs + 500
  const pool = new pg.Pool({
    Client: AuthdClient as unknown as typeof pg.Client,
    connectionString: opts.url,
    max: opts.poolSize,
    types,
    application_name: 'authd',
    statement_timeout: opts.queryTimeoutMs,
    lock_timeout: opts.queryTimeoutMs,
    // a client that died inside a transaction does not hold its locks for long
    idle_in_transaction_session_timeout: Math.max(10_000, 4 * opts.queryTimeoutMs),
    connectionTimeoutMillis: opts.queryTimeoutMs,
    keepAlive: true,
    idleTimeoutMillis: 30_000,
  })

  // A connection the server ends (a restart, a failover) emits 'error' while idle (the pool then
  // emits it) or while checked out: unheard, either would end the process. Logged at most once
  // per 10 s; the operation that was using it, if any, fails with STORE_UNAVAILABLE.
  let lastWarn = 0
  const warn = (err: Error): void => {
    const now = Date.now()
    if (now - lastWarn < 10_000) return
    lastWarn = now
    opts.log?.warn({ err: { message: err.message, code: sqlState(err) } }, 'database connection lost; new connections are opened as needed')
  }
  pool.on('error', warn)
  pool.on('connect', (client) => client.on('error', warn))

  const statement = (client: pg.ClientBase, text: string, values: readonly unknown[] = []): Promise<pg.QueryResult> =>
    client.query({ name: named(text), text, values: values as unknown[] })

  const unavailable = (what: string): AppError => unavailableError(`the database did not answer within ${deadlineMs} ms (${what})`)

  /**
   * Runs `work` on a pooled connection, all of it (waiting for the connection included) within
   * the deadline. Past it the caller gets STORE_UNAVAILABLE and the connection is ended (its
   * server may be gone); what `work` did is not committed unless its COMMIT had already gone out.
   */
  function withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let client: pg.PoolClient | undefined
      let over = false
      const timer = setTimeout(() => {
        over = true
        if (client !== undefined) destroy(client, unavailable('operation'))
        reject(unavailable('operation'))
      }, deadlineMs)
      pool.connect().then(
        async (c) => {
          if (over) {
            c.release()
            return
          }
          client = c
          let broken: unknown
          try {
            const value = await work(c)
            if (!over) resolve(value)
          } catch (err) {
            if (isUnavailable(err)) broken = err
            if (!over) reject(storeError(err))
          } finally {
            clearTimeout(timer)
            if (!over) {
              if (broken !== undefined) destroy(c, broken as Error)
              else c.release()
            }
          }
        },
        (err: unknown) => {
          clearTimeout(timer)
          if (!over) reject(storeError(err))
        },
      )
    })
  }

  async function retrying<T>(once: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once()
      } catch (err) {
        if (attempt >= RETRIES || !RETRY_CODES.has(sqlState(err) ?? '')) throw err
      }
    }
  }

  return {
    async query<R>(text: string, values?: readonly unknown[]) {
      return withClient((c) => retrying(async () => (await statement(c, text, values)).rows as R[]))
    },

    tx<T>(fn: (sql: Sql) => Promise<T>) {
      return withClient((c) => {
        const sql: Sql = { query: async <R>(text: string, values?: readonly unknown[]) => (await statement(c, text, values)).rows as R[] }
        return retrying(async () => {
          await c.query('BEGIN')
          try {
            const result = await fn(sql)
            await c.query('COMMIT')
            return result
          } catch (err) {
            // a broken connection is ended by withClient; a healthy one goes back clean. A
            // transaction the server broke off (retried below) was answered on a live connection,
            // and is in its aborted state until rolled back: the next BEGIN would run in it.
            if (!isUnavailable(err) || RETRY_CODES.has(sqlState(err) ?? '')) await c.query('ROLLBACK')
            throw err
          }
        })
      })
    },

    async lease(o: { deadlineMs?: number } = {}) {
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (err) {
        throw storeError(err)
      }
      let released = false
      const timed = <T>(work: Promise<T>): Promise<T> =>
        new Promise<T>((resolve, reject) => {
          const timer = setTimeout(() => {
            released = true
            destroy(client, unavailable('statement'))
            reject(unavailable('statement'))
          }, o.deadlineMs ?? deadlineMs)
          work.then(
            (v) => {
              clearTimeout(timer)
              resolve(v)
            },
            (err: unknown) => {
              clearTimeout(timer)
              reject(storeError(err))
            },
          )
        })
      return {
        query: async <R>(text: string, values?: readonly unknown[]) => (await timed(statement(client, text, values))).rows as R[],
        script: async (text: string) => {
          await timed(client.query(text))
        },
        release(err?: unknown) {
          if (released) return
          released = true
          if (err !== undefined) destroy(client, err instanceof Error ? err : new Error(String(err)))
          else client.release()
        },
      }
    },

    end: () => pool.end(),
  }
}
