/**
 * Reads a stopped (or crashed) daemon's LMDB store directly, read-only, to see what survived:
 * whole records and their indexes. Also how the fuzz case gets the signing key, to sign tokens
 * whose claims (not signature) are wrong. Knows the store's layout: if the layout changes these
 * checks fail loudly, they never pass silently.
 */
import { createHash } from 'node:crypto'
import { open } from 'lmdb'

export const tokenHash = (token) => createHash('sha256').update(token).digest('base64url')

function openRoot(path) {
  return open({ path, noSubdir: false, maxDbs: 16, compression: false, readOnly: true })
}

/** The store's signing keys (the records as stored). */
export function readKeys(path) {
  const root = openRoot(path)
  try {
    return [...root.openDB({ name: 'keys' }).getRange().map(({ value }) => value)]
  } finally {
    root.close()
  }
}

/**
 * Everything in the store, with the consistency problems found: a record without its index
 * entry, an index entry without its record, a record missing fields.
 */
export function inspectStore(path) {
  const root = openRoot(path)
  try {
    const db = (name) => root.openDB({ name })
    const users = new Map([...db('users').getRange()].map(({ key, value }) => [key, value]))
    const emails = new Map([...db('emails').getRange()].map(({ key, value }) => [key, value]))
    const sessions = new Map([...db('sessions').getRange()].map(({ key, value }) => [key, value]))
    const userSessions = [...db('user_sessions').getRange()].map(({ key }) => key)
    const refresh = new Map([...db('refresh').getRange()].map(({ key, value }) => [key, value]))
    const sessionTokens = [...db('session_tokens').getRange()].map(({ key, value }) => [key, value])
    const problems = []
    const userFields = ['id', 'email', 'passwordHash', 'createdAt', 'updatedAt', 'disabled']
    for (const [id, u] of users) {
      if (userFields.some((f) => u?.[f] === undefined)) problems.push(`user ${id} lacks fields`)
      if (emails.get(u.email) !== id) problems.push(`user ${id} has no email index entry`)
      if (typeof u.passwordHash !== 'string' || !u.passwordHash.startsWith('$argon2id$')) problems.push(`user ${id} has a partial hash`)
    }
    for (const [email, id] of emails) if (users.get(id)?.email !== email) problems.push(`email ${email} points at no user`)
    const sessionFields = ['id', 'userId', 'createdAt', 'lastUsedAt', 'expiresAt', 'refreshHash', 'generation']
    const indexed = new Set(userSessions.map((k) => `${k[0]}|${k[1]}`))
    for (const [id, s] of sessions) {
      if (sessionFields.some((f) => s?.[f] === undefined)) problems.push(`session ${id} lacks fields`)
      if (!users.has(s.userId)) problems.push(`session ${id} of a missing user`)
      if (!indexed.has(`${s.userId}|${id}`)) problems.push(`session ${id} not in user_sessions`)
      if (refresh.get(s.refreshHash) !== id) problems.push(`session ${id}: live refresh hash not indexed`)
      if (s.familyHash !== undefined && refresh.get(s.familyHash) !== id) problems.push(`session ${id}: its token family not indexed`)
    }
    for (const k of userSessions) if (sessions.get(k[1])?.userId !== k[0]) problems.push(`user_sessions entry ${k[1]} without session`)
    for (const [hash, sid] of refresh) if (!sessions.has(sid)) problems.push(`refresh hash ${hash.slice(0, 8)}… of a missing session`)
    for (const [key] of sessionTokens) if (!sessions.has(key[0])) problems.push(`session_tokens entry of a missing session`)
    return { users, emails, sessions, refresh, problems }
  } finally {
    root.close()
  }
}
