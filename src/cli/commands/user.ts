/** authctl user add | list | show | disable | enable | passwd | rm | mfa reset: compute only, no printing. */
import { checkNewPassword, lazyPasswordTools, newEmailForm, type UserSummary } from '../../core/admin.js'
import { makesNewStore, type BaseDeps, type StoreDeps } from '../deps.js'
import { cell, iso, shortTime, type View } from '../output.js'

/** a user as authctl shows it (the JSON form) */
export interface UserDoc {
  id: string
  email: string
  createdAt: string
  updatedAt: string
  disabled: boolean
  sessions: number
  /** whether the second factor is on; nothing else of it (never the secret) is shown */
  mfaEnabled: boolean
}

export const userDoc = (u: UserSummary): UserDoc => ({
  id: u.id,
  email: u.email,
  createdAt: iso(u.createdAt)!,
  updatedAt: iso(u.updatedAt)!,
  disabled: u.disabled,
  sessions: u.sessions,
  mfaEnabled: u.mfaEnabled,
})

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

const userFields = (u: UserDoc): Array<[string, string]> => [
  ['id', u.id],
  ['email', cell(u.email, 300)],
  ['created', shortTime(Date.parse(u.createdAt))],
  ['updated', shortTime(Date.parse(u.updatedAt))],
  ['disabled', u.disabled ? 'yes' : 'no'],
  ['sessions', String(u.sessions)],
  ['2fa', u.mfaEnabled ? 'on' : 'off'],
]

/**
 * A bad or taken email is refused before the password is asked for. Into a store that does not
 * exist yet (`open` makes it), the email and the password are checked before it is made, so a
 * refused add leaves none behind (README, "Administer with authctl").
 */
export async function userAdd(
  base: BaseDeps,
  args: { email: string; passwordStdin: boolean },
  open: () => Promise<StoreDeps & { close(): Promise<void> }>,
): Promise<{ user: UserDoc }> {
  let password: string | undefined
  const config = await base.config()
  if (makesNewStore(config)) {
    newEmailForm(args.email)
    password = await base.newPassword(args.passwordStdin)
    await checkNewPassword(lazyPasswordTools(config), password)
  }
  const deps = await open()
  try {
    await deps.admin.checkNewEmail(args.email)
    password ??= await deps.newPassword(args.passwordStdin)
    return { user: userDoc(await deps.admin.addUser(args.email, password)) }
  } finally {
    await deps.close()
  }
}
export const userAddView = (d: { user: UserDoc }): View => ({ fields: [['id', d.user.id], ['email', cell(d.user.email, 300)]], note: 'User created.' })

export async function userList(deps: StoreDeps): Promise<{ users: UserDoc[] }> {
  return { users: (await deps.admin.listUsers()).map(userDoc) }
}
export const userListView = (d: { users: UserDoc[] }): View => ({
  table: {
    columns: ['ID', 'EMAIL', 'CREATED', 'DISABLED', '2FA', 'SESSIONS'],
    rows: d.users.map((u) => [u.id, cell(u.email), shortTime(Date.parse(u.createdAt)), u.disabled ? 'yes' : 'no', u.mfaEnabled ? 'on' : 'off', String(u.sessions)]),
  },
  empty: 'No users.',
})

export async function userShow(deps: StoreDeps, args: { ref: string }): Promise<{ user: UserDoc }> {
  return { user: userDoc(await deps.admin.showUser(args.ref)) }
}
export const userShowView = (d: { user: UserDoc }): View => ({ fields: userFields(d.user) })

export async function userDisable(deps: StoreDeps, args: { ref: string }): Promise<{ user: UserDoc; revokedSessions: number }> {
  const r = await deps.admin.disableUser(args.ref)
  return { user: userDoc(r.user), revokedSessions: r.revokedSessions }
}
export const userDisableView = (d: { user: UserDoc; revokedSessions: number }): View => ({
  lines: [`Disabled ${d.user.email} (${d.user.id}); revoked ${plural(d.revokedSessions, 'session')}.`],
})

export async function userEnable(deps: StoreDeps, args: { ref: string }): Promise<{ user: UserDoc }> {
  return { user: userDoc((await deps.admin.enableUser(args.ref)).user) }
}
export const userEnableView = (d: { user: UserDoc }): View => ({ lines: [`Enabled ${d.user.email} (${d.user.id}).`] })

export async function userPasswd(deps: StoreDeps, args: { ref: string; passwordStdin: boolean }): Promise<{ user: UserDoc; revokedSessions: number }> {
  // an unknown user is reported before a password is asked for
  await deps.admin.resolveUser(args.ref)
  const password = await deps.newPassword(args.passwordStdin)
  const r = await deps.admin.setPassword(args.ref, password)
  return { user: userDoc(r.user), revokedSessions: r.revokedSessions }
}
export const userPasswdView = (d: { user: UserDoc; revokedSessions: number }): View => ({
  lines: [`Password changed for ${d.user.email} (${d.user.id}); revoked ${plural(d.revokedSessions, 'session')}.`],
})

export async function userRm(deps: StoreDeps, args: { ref: string; yes: boolean }): Promise<{ removed: UserDoc; revokedSessions: number }> {
  const user = await deps.admin.showUser(args.ref)
  await deps.confirm(`delete user ${user.email} (${user.id}) and its ${plural(user.sessions, 'session')}`, args.yes)
  const r = await deps.admin.removeUser(user.id)
  return { removed: userDoc(r.user), revokedSessions: r.revokedSessions }
}
export const userRmView = (d: { removed: UserDoc; revokedSessions: number }): View => ({
  lines: [`Deleted ${d.removed.email} (${d.removed.id}) and ${plural(d.revokedSessions, 'session')}.`],
})

export async function userMfaReset(deps: StoreDeps, args: { ref: string; yes: boolean }): Promise<{ user: UserDoc; wasEnabled: boolean; setupRemoved: boolean }> {
  // an unknown user is reported before anything is asked
  const user = await deps.admin.showUser(args.ref)
  await deps.confirm(`reset the second factor of ${user.email} (${user.id}), so that the password alone signs in`, args.yes)
  const r = await deps.admin.resetMfa(user.id)
  return { user: userDoc(r.user), wasEnabled: r.wasEnabled, setupRemoved: r.setupRemoved }
}
export const userMfaResetView = (d: { user: UserDoc; wasEnabled: boolean; setupRemoved: boolean }): View => ({
  lines: [
    d.wasEnabled
      ? `Reset the second factor of ${d.user.email} (${d.user.id}); its recovery codes are void and the password alone signs in.`
      : d.setupRemoved
        ? `${d.user.email} (${d.user.id}) had no second factor; removed the set-up not yet confirmed.`
        : `${d.user.email} (${d.user.id}) had no second factor; nothing to reset.`,
  ],
})
