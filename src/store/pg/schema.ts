/**
 * The PostgreSQL store's schema and its migrations. The first program (authd or authctl) that
 * opens a database creates or upgrades it, under an advisory lock, so several starting at once
 * run each migration once; a database whose schema is newer than the program is refused.
 *
 * Tables carry the `authd_` prefix (the database may hold other applications' tables). Records
 * are kept whole as JSON beside the columns that find, order and join them; identifiers sort
 * by code unit (COLLATE "C"), whatever the database's locale.
 */
import { AppError } from '../../errors.js'
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
  // 1 → 2: the audit append and a login's session write as one statement each (fewer round trips)
  `
  -- Appends events to the audit log under the head's row lock (held until the commit): seq from
  -- the head, each hash the SHA-256 (hex) of the previous hash, a newline and the event's
  -- canonical JSON (store/audit-chain.ts). The caller sends that JSON in two pieces, the text
  -- before and after the seq's digits (p_canon_head, p_canon_tail), and the stored body's text
  -- after its leading seq and before its hash (p_body_mid): only the seq is decided here.
  CREATE FUNCTION authd_audit_append(p_at bigint[], p_event text[], p_user_id text[], p_canon_head text[], p_canon_tail text[], p_body_mid text[])
  RETURNS void LANGUAGE plpgsql AS $$
  DECLARE
    h_seq bigint;
    h_hash text;
  BEGIN
    IF coalesce(cardinality(p_at), 0) = 0 THEN
      RETURN;
    END IF;
    SELECT seq, hash INTO h_seq, h_hash FROM authd_audit_head FOR UPDATE;
    FOR i IN 1 .. cardinality(p_at) LOOP
      h_seq := h_seq + 1;
      h_hash := encode(sha256(convert_to(h_hash || E'\n' || p_canon_head[i] || h_seq::text || p_canon_tail[i], 'UTF8')), 'hex');
      INSERT INTO authd_audit (seq, at, event, user_id, body)
      VALUES (h_seq, p_at[i], p_event[i], p_user_id[i], ('{"seq":' || h_seq::text || p_body_mid[i] || ',"hash":"' || h_hash || '"}')::json);
    END LOOP;
    UPDATE authd_audit_head SET seq = h_seq, hash = h_hash;
  END
  $$;

  -- What a login read of the user's sessions, as text: the same text again means nothing changed.
  CREATE FUNCTION authd_sessions_seen(p_user_id text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT coalesce(string_agg(id || ' ' || created_at || ' ' || last_used_at || ' ' || expires_at || ' ' || sealed, ',' ORDER BY id), '')
    FROM authd_sessions WHERE user_id = p_user_id
  $$;

  -- A login's write (Store.createSession) as one statement: under the user's advisory lock, if
  -- the user's sessions are still what the caller read (p_seen; NULL: no bound, no lock), the
  -- evicted ones deleted, the session and its token entries inserted, the events appended.
  -- false (nothing written) when they changed: the caller decides again, locked.
  CREATE FUNCTION authd_create_session(p_lock integer, p_seen text, p_evict text[],
      p_id text, p_user_id text, p_created_at bigint, p_last_used_at bigint, p_expires_at bigint, p_sealed boolean, p_record json,
      p_hashes text[], p_generations integer[],
      p_at bigint[], p_event text[], p_event_user text[], p_canon_head text[], p_canon_tail text[], p_body_mid text[])
  RETURNS boolean LANGUAGE plpgsql AS $$
  BEGIN
    IF p_seen IS NOT NULL THEN
      PERFORM pg_advisory_xact_lock(p_lock, hashtext(p_user_id));
      -- a statement of its own: it sees what committed before the lock was granted
      IF authd_sessions_seen(p_user_id) IS DISTINCT FROM p_seen THEN
        RETURN false;
      END IF;
      IF coalesce(cardinality(p_evict), 0) > 0 THEN
        DELETE FROM authd_sessions WHERE id = ANY (p_evict);
      END IF;
    END IF;
    INSERT INTO authd_sessions (id, user_id, created_at, last_used_at, expires_at, sealed, record)
    VALUES (p_id, p_user_id, p_created_at, p_last_used_at, p_expires_at, p_sealed, p_record)
    ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, created_at = EXCLUDED.created_at,
      last_used_at = EXCLUDED.last_used_at, expires_at = EXCLUDED.expires_at, sealed = EXCLUDED.sealed,
      record = EXCLUDED.record;
    INSERT INTO authd_session_tokens (hash, session_id, generation)
    SELECT x.h, p_id, x.g FROM unnest(p_hashes, p_generations) AS x(h, g)
    ON CONFLICT (hash) DO UPDATE SET session_id = EXCLUDED.session_id, generation = EXCLUDED.generation;
    PERFORM authd_audit_append(p_at, p_event, p_event_user, p_canon_head, p_canon_tail, p_body_mid);
    RETURN true;
  END
  $$;
  `,
  // 2 → 3: the limiter's consume and release of one or two counters without a query per call to
  // sort them (about a third less database time per consume)
  `
  -- A consume or release of one counter, or of two different ones (every consume authd makes),
  -- takes a lean path: the counters in variables, the lock order by one comparison, expired
  -- events cut off by an array slice. Any other call (more counters, one listed twice) goes to
  -- the general function, renamed authd_rate_consume_n / authd_rate_release_n. Same answers.
  ALTER FUNCTION authd_rate_consume(text[], bigint[], integer[]) RENAME TO authd_rate_consume_n;
  ALTER FUNCTION authd_rate_release(text[], bigint[], bigint) RENAME TO authd_rate_release_n;

  CREATE FUNCTION authd_rate_consume(p_keys text[], p_windows bigint[], p_counts integer[])
  RETURNS TABLE (ok boolean, wait_us bigint, blocked_by integer, at_us bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    n constant integer := coalesce(cardinality(p_keys), 0);
    -- lock (and write) order: the second counter first when it sorts first
    swap constant boolean := n = 2 AND (p_keys[2] COLLATE "C" < p_keys[1] COLLATE "C" OR (p_keys[2] = p_keys[1] AND p_windows[2] < p_windows[1]));
    h1 bigint[];
    h2 bigint[];
    f1 boolean := false;
    f2 boolean := false;
    first1 integer;
    first2 integer;
    h bigint[];
    i integer;
    t bigint;
    w bigint;
    first integer;
    live integer;
    over integer;
    waiting bigint;
    blocked integer;
    added integer;
  BEGIN
    IF n > 2 OR (n = 2 AND p_keys[1] = p_keys[2] AND p_windows[1] = p_windows[2]) THEN
      RETURN QUERY SELECT * FROM authd_rate_consume_n(p_keys, p_windows, p_counts);
      RETURN;
    END IF;
    FOR pass IN 1..2 LOOP
      t := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
      IF pass = 1 THEN
        -- unlocked: a refusal is decided on what was committed, writes nothing, waits for nobody
        IF n >= 1 THEN
          SELECT x.times INTO h1 FROM authd_rate x WHERE x.key = p_keys[1] AND x.window_ms = p_windows[1];
        END IF;
        IF n = 2 THEN
          SELECT x.times INTO h2 FROM authd_rate x WHERE x.key = p_keys[2] AND x.window_ms = p_windows[2];
        END IF;
      ELSE
        FOR j IN 1..n LOOP
          i := CASE WHEN swap THEN 3 - j ELSE j END;
          SELECT x.times INTO h FROM authd_rate x WHERE x.key = p_keys[i] AND x.window_ms = p_windows[i] FOR UPDATE;
          IF i = 1 THEN
            h1 := h;
            f1 := FOUND;
          ELSE
            h2 := h;
            f2 := FOUND;
          END IF;
        END LOOP;
        -- past every event these counters hold (release un-counts by this time)
        t := greatest(t, h1[cardinality(h1)] + 1, h2[cardinality(h2)] + 1);
      END IF;
      waiting := 0;
      blocked := -1;
      FOR j IN 1..n LOOP
        h := coalesce(CASE WHEN j = 1 THEN h1 ELSE h2 END, '{}');
        w := p_windows[j];
        first := 1;
        WHILE first <= cardinality(h) AND h[first] + w * 1000 <= t LOOP
          first := first + 1;
        END LOOP;
        live := cardinality(h) - first + 1;
        over := live - p_counts[j];
        IF over >= 0 THEN
          IF blocked < 0 THEN
            blocked := j - 1;
          END IF;
          waiting := greatest(waiting, CASE WHEN over < live THEN h[first + over] + w * 1000 - t ELSE w * 1000 END);
        END IF;
        IF j = 1 THEN
          first1 := first;
        ELSE
          first2 := first;
        END IF;
      END LOOP;
      IF blocked >= 0 THEN
        RETURN QUERY SELECT false, waiting, blocked, NULL::bigint;
        RETURN;
      END IF;
    END LOOP;
    FOR j IN 1..n LOOP
      i := CASE WHEN swap THEN 3 - j ELSE j END;
      IF (CASE WHEN i = 1 THEN f1 ELSE f2 END) THEN
        h := CASE WHEN i = 1 THEN h1 ELSE h2 END;
        UPDATE authd_rate x SET times = h[(CASE WHEN i = 1 THEN first1 ELSE first2 END):] || t
          WHERE x.key = p_keys[i] AND x.window_ms = p_windows[i];
      ELSE
        INSERT INTO authd_rate (key, window_ms, times) VALUES (p_keys[i], p_windows[i], ARRAY[t]) ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS added = ROW_COUNT;
        IF added = 0 THEN
          RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = 'a rate-limit counter was created meanwhile';
        END IF;
      END IF;
    END LOOP;
    RETURN QUERY SELECT true, 0::bigint, -1, t;
  END
  $fn$;

  -- and then forgets the counters of p_reset, if given (a successful login clears its address
  -- and email's failures): one of the counters is deleted in its place in the lock order
  CREATE FUNCTION authd_rate_release(p_keys text[], p_windows bigint[], p_at bigint, p_reset text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql AS $fn$
  DECLARE
    n constant integer := coalesce(cardinality(p_keys), 0);
    swap constant boolean := n = 2 AND (p_keys[2] COLLATE "C" < p_keys[1] COLLATE "C" OR (p_keys[2] = p_keys[1] AND p_windows[2] < p_windows[1]));
    i integer;
  BEGIN
    IF n > 2 OR (n = 2 AND p_keys[1] = p_keys[2] AND p_windows[1] = p_windows[2]) THEN
      PERFORM authd_rate_release_n(p_keys, p_windows, p_at);
    ELSE
      FOR j IN 1..n LOOP
        i := CASE WHEN swap THEN 3 - j ELSE j END;
        IF p_keys[i] = p_reset THEN
          DELETE FROM authd_rate r WHERE r.key = p_reset;
        ELSE
          UPDATE authd_rate r SET times = array_remove(r.times, p_at)
            WHERE r.key = p_keys[i] AND r.window_ms = p_windows[i] AND p_at = ANY (r.times);
        END IF;
      END LOOP;
    END IF;
    IF p_reset IS NOT NULL THEN
      DELETE FROM authd_rate r WHERE r.key = p_reset;
    END IF;
  END
  $fn$;
  `,
  // 3 → 4: a refusal says whether it is the first of its counter's window (the rate_limit.block
  // the audit log records once per limit and key per window, however many instances refuse)
  `
  -- Until when (µs of the database's clock) a refusal of the counter is not the first of its
  -- window: its window's length after the first refusal; NULL: no refusal yet, or its events had
  -- all left the window since.
  ALTER TABLE authd_rate ADD COLUMN blocked_until bigint;

  -- Marks the counter refused at p_at unless a refusal within its window marked it already: true
  -- for exactly one of any number of callers at once (the update waits for the row's lock and
  -- re-reads it). A counter without a row (a limit of 0) gets one, holding no events.
  CREATE FUNCTION authd_rate_block(p_key text, p_window bigint, p_at bigint) RETURNS boolean
  LANGUAGE plpgsql AS $fn$
  DECLARE
    marked integer;
  BEGIN
    UPDATE authd_rate x SET blocked_until = p_at + p_window * 1000
      WHERE x.key = p_key AND x.window_ms = p_window AND (x.blocked_until IS NULL OR x.blocked_until <= p_at);
    GET DIAGNOSTICS marked = ROW_COUNT;
    IF marked > 0 THEN
      RETURN true;
    END IF;
    INSERT INTO authd_rate (key, window_ms, times, blocked_until) VALUES (p_key, p_window, '{}', p_at + p_window * 1000)
      ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS marked = ROW_COUNT;
    RETURN marked > 0;
  END
  $fn$;

  -- authd_rate_consume of version 3, answering also first_block: whether a refusal is the first
  -- of the refusing counter's window. A refusal of a counter marked already (a flood's) is still
  -- decided on what was committed, writes nothing and waits for nobody; only the first of a
  -- window marks the row (authd_rate_block). A counter counted again after its events had all
  -- left the window is unmarked in the same write.
  DROP FUNCTION authd_rate_consume(text[], bigint[], integer[]);
  CREATE FUNCTION authd_rate_consume(p_keys text[], p_windows bigint[], p_counts integer[])
  RETURNS TABLE (ok boolean, wait_us bigint, blocked_by integer, at_us bigint, first_block boolean)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    n constant integer := coalesce(cardinality(p_keys), 0);
    -- lock (and write) order: the second counter first when it sorts first
    swap constant boolean := n = 2 AND (p_keys[2] COLLATE "C" < p_keys[1] COLLATE "C" OR (p_keys[2] = p_keys[1] AND p_windows[2] < p_windows[1]));
    h1 bigint[];
    h2 bigint[];
    -- each counter's blocked_until
    b1 bigint;
    b2 bigint;
    f1 boolean := false;
    f2 boolean := false;
    first1 integer;
    first2 integer;
    h bigint[];
    b bigint;
    i integer;
    t bigint;
    w bigint;
    first integer;
    live integer;
    over integer;
    waiting bigint;
    blocked integer;
    added integer;
    marked boolean;
    general record;
  BEGIN
    IF n > 2 OR (n = 2 AND p_keys[1] = p_keys[2] AND p_windows[1] = p_windows[2]) THEN
      SELECT * INTO general FROM authd_rate_consume_n(p_keys, p_windows, p_counts);
      IF general.ok THEN
        RETURN QUERY SELECT true, 0::bigint, -1, general.at_us, false;
      ELSE
        marked := authd_rate_block(p_keys[general.blocked_by + 1], p_windows[general.blocked_by + 1], (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
        RETURN QUERY SELECT false, general.wait_us, general.blocked_by, NULL::bigint, marked;
      END IF;
      RETURN;
    END IF;
    FOR pass IN 1..2 LOOP
      t := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
      IF pass = 1 THEN
        -- unlocked: a refusal is decided on what was committed, and waits for nobody
        IF n >= 1 THEN
          SELECT x.times, x.blocked_until INTO h1, b1 FROM authd_rate x WHERE x.key = p_keys[1] AND x.window_ms = p_windows[1];
        END IF;
        IF n = 2 THEN
          SELECT x.times, x.blocked_until INTO h2, b2 FROM authd_rate x WHERE x.key = p_keys[2] AND x.window_ms = p_windows[2];
        END IF;
      ELSE
        FOR j IN 1..n LOOP
          i := CASE WHEN swap THEN 3 - j ELSE j END;
          SELECT x.times, x.blocked_until INTO h, b FROM authd_rate x WHERE x.key = p_keys[i] AND x.window_ms = p_windows[i] FOR UPDATE;
          IF i = 1 THEN
            h1 := h;
            b1 := b;
            f1 := FOUND;
          ELSE
            h2 := h;
            b2 := b;
            f2 := FOUND;
          END IF;
        END LOOP;
        -- past every event these counters hold (release un-counts by this time)
        t := greatest(t, h1[cardinality(h1)] + 1, h2[cardinality(h2)] + 1);
      END IF;
      waiting := 0;
      blocked := -1;
      FOR j IN 1..n LOOP
        h := coalesce(CASE WHEN j = 1 THEN h1 ELSE h2 END, '{}');
        w := p_windows[j];
        first := 1;
        WHILE first <= cardinality(h) AND h[first] + w * 1000 <= t LOOP
          first := first + 1;
        END LOOP;
        live := cardinality(h) - first + 1;
        over := live - p_counts[j];
        IF over >= 0 THEN
          IF blocked < 0 THEN
            blocked := j - 1;
          END IF;
          waiting := greatest(waiting, CASE WHEN over < live THEN h[first + over] + w * 1000 - t ELSE w * 1000 END);
        END IF;
        IF j = 1 THEN
          first1 := first;
        ELSE
          first2 := first;
        END IF;
      END LOOP;
      IF blocked >= 0 THEN
        b := CASE WHEN blocked = 0 THEN b1 ELSE b2 END;
        -- marked within its window already: a flood's refusal, nothing written
        IF b IS NOT NULL AND b > t THEN
          marked := false;
        ELSE
          marked := authd_rate_block(p_keys[blocked + 1], p_windows[blocked + 1], t);
        END IF;
        RETURN QUERY SELECT false, waiting, blocked, NULL::bigint, marked;
        RETURN;
      END IF;
    END LOOP;
    FOR j IN 1..n LOOP
      i := CASE WHEN swap THEN 3 - j ELSE j END;
      IF (CASE WHEN i = 1 THEN f1 ELSE f2 END) THEN
        h := CASE WHEN i = 1 THEN h1 ELSE h2 END;
        first := CASE WHEN i = 1 THEN first1 ELSE first2 END;
        -- every event it held had left the window: a new window, whose first refusal is a new block
        UPDATE authd_rate x SET times = h[first:] || t,
            blocked_until = CASE WHEN first > cardinality(h) THEN NULL ELSE x.blocked_until END
          WHERE x.key = p_keys[i] AND x.window_ms = p_windows[i];
      ELSE
        INSERT INTO authd_rate (key, window_ms, times) VALUES (p_keys[i], p_windows[i], ARRAY[t]) ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS added = ROW_COUNT;
        IF added = 0 THEN
          RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = 'a rate-limit counter was created meanwhile';
        END IF;
      END IF;
    END LOOP;
    RETURN QUERY SELECT true, 0::bigint, -1, t, false;
  END
  $fn$;
  `,
  // 4 → 5: a login's write in one round trip when the user has room under sessions.max_per_user
  `
  -- A login's write (Store.createSession with a bound) when the user has room: under the user's
  -- advisory lock, the user's live sessions (live at p_now: p_now < expires_at and
  -- p_now < last_used_at + p_idle_ms, as core/sessions.ts isLive) are counted; with fewer than
  -- p_max the new one fits, and it is written as authd_create_session writes it (none ends).
  -- false (nothing written) when the user is at the bound: the caller reads the sessions and
  -- decides which end (authd_create_session with p_seen).
  CREATE FUNCTION authd_create_session_within(p_lock integer, p_max integer, p_now bigint, p_idle_ms bigint,
      p_id text, p_user_id text, p_created_at bigint, p_last_used_at bigint, p_expires_at bigint, p_sealed boolean, p_record json,
      p_hashes text[], p_generations integer[],
      p_at bigint[], p_event text[], p_event_user text[], p_canon_head text[], p_canon_tail text[], p_body_mid text[])
  RETURNS boolean LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock(p_lock, hashtext(p_user_id));
    -- a statement of its own: it sees what committed before the lock was granted
    IF (SELECT count(*) FROM authd_sessions
        WHERE user_id = p_user_id AND p_now < expires_at AND p_now < last_used_at + p_idle_ms) >= p_max THEN
      RETURN false;
    END IF;
    RETURN authd_create_session(p_lock, NULL, NULL, p_id, p_user_id, p_created_at, p_last_used_at, p_expires_at, p_sealed, p_record,
      p_hashes, p_generations, p_at, p_event, p_event_user, p_canon_head, p_canon_tail, p_body_mid);
  END
  $$;
  `,
  // 5 → 6: a login's session written only for the password it checked (Store.createSessionFor)
  `
  -- authd_create_session_within for a user whose password was just checked against p_hash:
  -- under the user's advisory lock (a password change, a disable and a deletion take it too),
  -- -1 and nothing written unless the user is there, enabled and still holds p_hash; else 1 when
  -- the session was written, 0 when the user is at the bound (nothing written: the caller decides
  -- the evictions in a transaction that checks the user again).
  CREATE FUNCTION authd_create_session_held(p_hash text, p_lock integer, p_max integer, p_now bigint, p_idle_ms bigint,
      p_id text, p_user_id text, p_created_at bigint, p_last_used_at bigint, p_expires_at bigint, p_sealed boolean, p_record json,
      p_hashes text[], p_generations integer[],
      p_at bigint[], p_event text[], p_event_user text[], p_canon_head text[], p_canon_tail text[], p_body_mid text[])
  RETURNS integer LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock(p_lock, hashtext(p_user_id));
    -- a statement of its own: it sees what committed before the lock was granted
    IF NOT EXISTS (SELECT 1 FROM authd_users WHERE id = p_user_id AND NOT disabled AND record->>'passwordHash' = p_hash) THEN
      RETURN -1;
    END IF;
    IF authd_create_session_within(p_lock, p_max, p_now, p_idle_ms, p_id, p_user_id, p_created_at, p_last_used_at, p_expires_at, p_sealed,
        p_record, p_hashes, p_generations, p_at, p_event, p_event_user, p_canon_head, p_canon_tail, p_body_mid) THEN
      RETURN 1;
    END IF;
    RETURN 0;
  END
  $$;
  `,
]

/** the schema this build writes */
export const PG_SCHEMA_VERSION = MIGRATIONS.length

/** the migrations of the schema, in order (a test builds a database of an older version with the first few) */
export const PG_MIGRATIONS: readonly string[] = MIGRATIONS

// the registry's sentence is the LMDB store's; a database has no backup of authd's to restore
const tooNew = (found: number): AppError =>
  new AppError('SCHEMA_TOO_NEW', {
    params: { found, latest: PG_SCHEMA_VERSION },
    message: `the database was set up by a newer authd (schema ${found}; this version understands up to ${PG_SCHEMA_VERSION}): upgrade authd`,
  })

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
