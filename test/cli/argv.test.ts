import t from 'tap'
import { protectDashedIds } from '../../src/cli/argv.js'
import { openTestStore } from '../helpers/app.js'
import { hashToken } from '../../src/core/sessions.js'
import { ctlFor, PASSWORD } from './run.js'

const known = new Set(['--yes', '--user', '--data', '--json', '--password-stdin', '--help', '-h'])
const takesValue = new Set(['--user', '--data'])

t.test('ids that start with "-" are operands, not unknown options', async (t) => {
  const sid = '-AbCdEfGhIjKlMnOpQrStU' // 22 characters, like every session and user id
  const kid = '-AbCdEfGhIjKlMnO' // 16, like every key id
  t.same(protectDashedIds(['sessions', 'revoke', sid, '--json'], known, takesValue), ['sessions', 'revoke', '--json', '--', sid])
  t.same(protectDashedIds(['keys', 'revoke', kid, '--yes', '--data', 'd'], known, takesValue), ['keys', 'revoke', '--yes', '--data', 'd', '--', kid])
  t.same(protectDashedIds(['sessions', 'list', '--user', sid], known, takesValue), ['sessions', 'list', '--user', sid], 'an option value stays')
  t.same(protectDashedIds(['keys', 'revoke', '--', kid], known, takesValue), ['keys', 'revoke', '--', kid], 'already behind --')
  t.same(protectDashedIds(['user', 'add', 'a@b.c', '--password-stdin'], known, takesValue), ['user', 'add', 'a@b.c', '--password-stdin'], 'a known option of that length stays')
  t.same(protectDashedIds(['user', 'list', '--bogus-option-x'], known, takesValue), ['user', 'list', '--bogus-option-x'], 'a mistyped option stays, to be reported')
  t.same(protectDashedIds(['keys', 'revoke', '-AbCdEfGhIjKlMn'], known, takesValue), ['keys', 'revoke', '-AbCdEfGhIjKlMn'], 'other lengths are not ids')
})

t.test('authctl revokes a session whose id starts with "-" (regression: it was taken for an option)', async (t) => {
  const dir = t.testdir()
  const ctl = ctlFor(dir)
  const ann = (await ctl(['user', 'add', 'ann@example.com', '--password-stdin', '--json'], { input: `${PASSWORD}\n` })).json().user
  const store = await openTestStore(t, dir)
  const id = '-dashFirstSession00000'
  const now = Date.now()
  await store.createSession({ id, userId: ann.id, createdAt: now, lastUsedAt: now, expiresAt: now + 86_400_000, ip: '127.0.0.1', userAgent: 't', refreshHash: hashToken('x'), previousHash: null, rotatedAt: null, generation: 0, familyHash: hashToken('family'), amr: ['pwd'] })
  const r = await ctl(['sessions', 'revoke', id])
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout, `Revoked session ${id} of ann@example.com.\n`)
  t.equal(await store.getSession(id), undefined)
  await store.close()
})
