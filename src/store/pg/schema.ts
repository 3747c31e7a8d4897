/**
 * The PostgreSQL store's schema and its migrations. The first program (authd or authctl) that
 * opens a database creates or upgrades it, under an advisory lock, so several starting at once
 * run each migration once; a database whose schema is newer than the program is refused.
 *
 * Tables carry the `authd_` prefix (the database may hold other applications' tables). Records
 * are kept whole as JSON beside the columns that find, order and join them; identifiers sort
 * by code unit (COLLATE "C"), whatever the database's locale.
 */
import { StoreError } from '../store.js'
import type { Db, Sql } from './db.js'

/** the advisory lock (key pair) under which the schema is created or upgraded */
const SCHEMA_LOCK = [0x61757468 /* "auth" */, 1] as const

/** how long the migrations may take, waiting for another program's included */
const MIGRATION_MS = 120_000

/** migrations[i] moves the schema from version i to i + 1, in one transaction */
const MIGRATIONS: readonly string[] = [
  // 0 → 1: the first schema
  `
  CREATE TABLE authd_meta (
    name text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
  );
  -- schema_version, and the secrets device_key and mfa_key (made once, by whoever comes first)

  CREATE TABLE authd_counters (
    name text COLLATE "C" PRIMARY KEY,
    n bigint NOT NULL
  );
  -- keys_version: bumped by every key write (whose row lock also puts key writes in one line);
  -- limit_clear_seq: the seq of the last limit-clear request
  INSERT INTO authd_counters (name, n) VALUES ('keys_version', 0), ('limit_clear_seq', 0);

  CREATE TABLE authd_users (
    id text COLLATE "C" PRIMARY KEY,
    email text COLLATE "C" NOT NULL UNIQUE,
    disabled boolean NOT NULL,
    mfa_enabled boolean NOT NULL,
    record json NOT NULL
  );

  -- stored password hashes per parameter set (Store.hashTally); rows at 0 are left in place
  CREATE TABLE authd_hash_tally (
    params text COLLATE "C" PRIMARY KEY,
    n bigint NOT NULL
  );

  -- no foreign key to users: a session outlives nothing, but a user's deletion removes its
  -- sessions in the same transaction, and an import takes sessions as they were exported
  CREATE TABLE authd_sessions (
    id text COLLATE "C" PRIMARY KEY,
    user_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    last_used_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    sealed boolean NOT NULL,
    record json NOT NULL
  );
  CREATE UNIQUE INDEX authd_sessions_by_user ON authd_sessions (user_id, id);

  -- the SHA-256 of each refresh token of a session's last generations, and (generation -1) of
  -- its token family: how a presented token finds its session
  CREATE TABLE authd_session_tokens (
    hash text COLLATE "C" PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES authd_sessions (id) ON DELETE CASCADE,
    generation integer NOT NULL
  );
  CREATE INDEX authd_session_tokens_by_session ON authd_session_tokens (session_id, generation);

  CREATE TABLE authd_keys (
    kid text COLLATE "C" PRIMARY KEY,
    state text NOT NULL CHECK (state IN ('next', 'active', 'retiring', 'retired')),
    record json NOT NULL
  );
  -- exactly one key is stored active, however many instances write at once
  CREATE UNIQUE INDEX authd_keys_one_active ON authd_keys (state) WHERE state = 'active';

  -- mfaTokens used by a second step, until they expire
  CREATE TABLE authd_mfa_used (
    expires_at bigint NOT NULL,
    id text COLLATE "C" NOT NULL,
    PRIMARY KEY (expires_at, id)
  );

  CREATE TABLE authd_limit_clears (
    seq bigint PRIMARY KEY,
    target json NOT NULL,
    at bigint NOT NULL
  );

  -- the audit log's head (the last event's seq and hash), locked by every append so seq counts
  -- without gaps across instances, and the anchor the first kept event chains to
  CREATE TABLE authd_audit_head (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq bigint NOT NULL,
    hash text NOT NULL,
    anchor_seq bigint NOT NULL,
    anchor_hash text NOT NULL
  );
  INSERT INTO authd_audit_head (seq, hash, anchor_seq, anchor_hash) VALUES (0, repeat('0', 64), 0, repeat('0', 64));

  -- each event whole (body, hash included) and the columns its queries filter on
  CREATE TABLE authd_audit (
    seq bigint PRIMARY KEY,
    at bigint NOT NULL,
    event text COLLATE "C" NOT NULL,
    user_id text COLLATE "C",
    body json NOT NULL
  );
  CREATE INDEX authd_audit_by_user ON authd_audit (user_id, seq);
  CREATE INDEX authd_audit_by_event ON authd_audit (event, seq);

  -- The rate limiter's sliding logs (store/pg/limiter.ts): the times (µs of the database's
  -- clock, ascending) of the events counted on one key under one window length. Unlogged: no
  -- WAL per request; a crash or a failover starts the windows afresh.
  CREATE UNLOGGED TABLE authd_rate (
    key text COLLATE "C" NOT NULL,
    window_ms bigint NOT NULL,
    times bigint[] NOT NULL,
    PRIMARY KEY (key, window_ms)
  );

  -- Counts one event (at one time of the database's clock) on every entry, or on none: the same
  -- as the in-process limiter's consume (core/rate-limiter.ts). A first pass reads the counters
  -- without locking them: a refusal (the common answer under attack) is decided on what was
  -- committed at that moment, writes nothing and waits for nobody. Otherwise a second pass locks
  -- the counters that exist, in one order for every caller (no deadlocks), decides again and
  -- counts. A counter that does not exist yet is created only then; if another consume created
  -- it meanwhile, this one fails with serialization_failure and is run again by the caller.
  -- Every statement in it looks up one counter by its key: its plan never depends on the call.
  CREATE FUNCTION authd_rate_consume(p_keys text[], p_windows bigint[], p_counts integer[])
  RETURNS TABLE (ok boolean, wait_us bigint, blocked_by integer, at_us bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    n constant integer := coalesce(cardinality(p_keys), 0);
    locked text[] := '{}';
    k text;
    w bigint;
    m integer;
    t bigint;
    latest bigint;
    held bigint[];
    first integer;
    live integer;
    earlier integer;
    over integer;
    waiting bigint;
    blocked integer;
    added integer;
  BEGIN
    FOR pass IN 1..2 LOOP
      t := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
      IF pass = 2 THEN
        latest := NULL;
        FOR k, w IN
          SELECT e.ek, e.ew FROM unnest(p_keys, p_windows) AS e(ek, ew)
          GROUP BY e.ek, e.ew ORDER BY e.ek COLLATE "C", e.ew
        LOOP
          SELECT x.times INTO held FROM authd_rate x WHERE x.key = k AND x.window_ms = w FOR UPDATE;
          IF FOUND THEN
            locked := locked || (k || ' ' || w);
            latest := greatest(latest, held[cardinality(held)]);
          END IF;
        END LOOP;
        -- past every event these counters hold: a consume's time is its own on each counter
        -- (release un-counts by it), and a clock stepping back reorders nothing
        t := greatest(t, latest + 1);
      END IF;
      waiting := 0;
      blocked := -1;
      FOR i IN 1..n LOOP
        k := p_keys[i];
        w := p_windows[i];
        held := NULL;
        IF pass = 1 OR (k || ' ' || w) = ANY (locked) THEN
          SELECT x.times INTO held FROM authd_rate x WHERE x.key = k AND x.window_ms = w;
        END IF;
        held := coalesce(held, '{}');
        -- held[first:] are the events still in the window
        first := 1;
        WHILE first <= cardinality(held) AND held[first] + w * 1000 <= t LOOP
          first := first + 1;
        END LOOP;
        live := cardinality(held) - first + 1;
        -- the same counter listed twice in one call is charged twice
        earlier := 0;
        FOR j IN 1..i - 1 LOOP
          IF p_keys[j] = k AND p_windows[j] = w THEN
            earlier := earlier + 1;
          END IF;
        END LOOP;
        over := live + earlier - p_counts[i];
        IF over >= 0 THEN
          IF blocked < 0 THEN
            blocked := i - 1;
          END IF;
          waiting := greatest(waiting, CASE WHEN over < live THEN held[first + over] + w * 1000 - t ELSE w * 1000 END);
        END IF;
      END LOOP;
      IF blocked >= 0 THEN
        RETURN QUERY SELECT false, waiting, blocked, NULL::bigint;
        RETURN;
      END IF;
    END LOOP;
    FOR k, w, m IN
      SELECT e.ek, e.ew, count(*)::integer FROM unnest(p_keys, p_windows) AS e(ek, ew)
      GROUP BY e.ek, e.ew ORDER BY e.ek COLLATE "C", e.ew
    LOOP
      IF (k || ' ' || w) = ANY (locked) THEN
        UPDATE authd_rate x
          SET times = ARRAY(SELECT y FROM unnest(x.times) AS y WHERE y + w * 1000 > t ORDER BY y) || array_fill(t, ARRAY[m])
          WHERE x.key = k AND x.window_ms = w;
      ELSE
        INSERT INTO authd_rate (key, window_ms, times) VALUES (k, w, array_fill(t, ARRAY[m])) ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS added = ROW_COUNT;
        IF added = 0 THEN
          RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = 'a rate-limit counter was created meanwhile';
        END IF;
      END IF;
    END LOOP;
    RETURN QUERY SELECT true, 0::bigint, -1, t;
  END
  $fn$;

  -- Un-counts the events one consume added (its time on each of its counters), in lock order.
  CREATE FUNCTION authd_rate_release(p_keys text[], p_windows bigint[], p_at bigint) RETURNS void
  LANGUAGE plpgsql AS $fn$
  DECLARE
    k text;
    w bigint;
  BEGIN
    FOR k, w IN
      SELECT e.ek, e.ew FROM unnest(p_keys, p_windows) AS e(ek, ew)
      GROUP BY e.ek, e.ew ORDER BY e.ek COLLATE "C", e.ew
    LOOP
      UPDATE authd_rate r SET times = array_remove(r.times, p_at)
        WHERE r.key = k AND r.window_ms = w AND p_at = ANY (r.times);
    END LOOP;
  END
  $fn$;
  `,
]

/** the schema this build writes */
export const PG_SCHEMA_VERSION = MIGRATIONS.length

const tooNew = (found: number): StoreError =>
  new StoreError(
    'SCHEMA_TOO_NEW',
    `the database was set up by a newer authd (schema ${found}; this version understands up to ${PG_SCHEMA_VERSION}): upgrade authd`,
  )

async function versionOf(sql: Sql): Promise<number> {
  const [{ present }] = await sql.query<{ present: boolean }>(`SELECT to_regclass('authd_meta') IS NOT NULL AS present`)
  if (!present) return 0
  const rows = await sql.query<{ value: string }>(`SELECT value FROM authd_meta WHERE name = 'schema_version'`)
  return rows.length === 0 ? 0 : Number(rows[0]!.value)
}

/**
 * Creates or upgrades the schema. A database already at this version costs two reads; otherwise
 * the program takes the advisory lock (waiting for another's migrations to finish), and then, in
 * a transaction begun after it (which sees what that one committed), reads the version again and
 * runs what is left.
 */
export async function migratePg(db: Db, steps: readonly string[] = MIGRATIONS): Promise<void> {
  const latest = steps.length
  const seen = await versionOf(db)
  if (seen > latest) throw tooNew(seen)
  if (seen === latest) return
  const conn = await db.lease({ deadlineMs: MIGRATION_MS + 1000 })
  let failed: unknown
  try {
    // a migration may convert many rows, and may wait for another program's
    await conn.script(`SET statement_timeout = ${MIGRATION_MS}; SET lock_timeout = ${MIGRATION_MS}`)
    await conn.query(`SELECT pg_advisory_lock($1, $2)`, SCHEMA_LOCK)
    await conn.query('BEGIN')
    const from = await versionOf(conn)
    if (from > latest) throw tooNew(from)
    for (let v = from; v < latest; v++) await conn.script(steps[v]!)
    await conn.query(
      `INSERT INTO authd_meta (name, value) VALUES ('schema_version', $1) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
      [String(latest)],
    )
    await conn.query('COMMIT')
    await conn.query(`SELECT pg_advisory_unlock($1, $2)`, SCHEMA_LOCK)
    await conn.script('RESET statement_timeout; RESET lock_timeout')
  } catch (err) {
    failed = err
    throw err
  } finally {
    // a failed migration's connection (its transaction, its lock) ends with it
    conn.release(failed)
  }
}

/** the schema version the database is at */
export const schemaVersionOf = (db: Db): Promise<number> => versionOf(db)
