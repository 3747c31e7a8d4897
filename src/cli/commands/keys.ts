/** authctl keys list | rotate | revoke: compute only, no printing. */
import type { Algorithm } from '../../config/types.js'
import type { KeySummary } from '../../core/admin.js'
import type { StoreDeps } from '../deps.js'
import { iso, shortTime, type View } from '../output.js'

/** a signing key as authctl shows it (never any key material) */
export interface KeyDoc {
  kid: string
  alg: Algorithm
  state: KeySummary['state']
  createdAt: string
  activatedAt: string | null
  retiringAt: string | null
  retiredAt: string | null
  verifiesUntil: string | null
}

export const keyDoc = (k: KeySummary): KeyDoc => ({
  kid: k.kid,
  alg: k.alg,
  state: k.state,
  createdAt: iso(k.createdAt)!,
  activatedAt: iso(k.activatedAt),
  retiringAt: iso(k.retiringAt),
  retiredAt: iso(k.retiredAt),
  verifiesUntil: iso(k.verifiesUntil),
})

const t = (s: string | null): string => shortTime(s === null ? null : Date.parse(s))

export async function keysList(deps: StoreDeps): Promise<{ keys: KeyDoc[] }> {
  return { keys: (await deps.admin.listKeys()).map(keyDoc) }
}
/**
 * The table's SIGNS FROM column (`activatedAt`) is when a key starts signing: to come for a next
 * key, the terminal UI's "signs from".
 */
export const keysListView = (d: { keys: KeyDoc[] }): View => ({
  table: {
    columns: ['KID', 'ALG', 'STATE', 'CREATED', 'SIGNS FROM', 'RETIRING', 'RETIRED'],
    rows: d.keys.map((k) => [k.kid, k.alg, k.state, t(k.createdAt), t(k.activatedAt), t(k.retiringAt), t(k.retiredAt)]),
  },
  empty: 'No keys (authd creates the first one on its first start).',
})

export interface RotateDoc {
  /** the new key: next (published, signing from its activatedAt) or, with --now, active */
  key: KeyDoc
  /** the key that signs now */
  active: KeyDoc
  /** the keys this rotation stopped signing */
  retiring: KeyDoc[]
  /** the keys still next that this rotation replaced (they never signed) */
  replaced: KeyDoc[]
}

export async function keysRotate(deps: StoreDeps, args: { algorithm?: Algorithm; now?: boolean }): Promise<RotateDoc> {
  const r = await deps.admin.rotateKey(args.algorithm, { now: args.now === true })
  return { key: keyDoc(r.key), active: keyDoc(r.active), retiring: r.retiring.map(keyDoc), replaced: r.replaced.map(keyDoc) }
}
export const keysRotateView = (d: RotateDoc): View => ({
  lines: [
    ...d.replaced.map((k) => `Key ${k.kid} was still next and is replaced: it never signed.`),
    ...(d.key.state === 'next'
      ? [
          `New key ${d.key.kid} (${d.key.alg}) is in the JWKS now and signs from ${t(d.key.activatedAt)} (tokens.key_lead).`,
          `Key ${d.active.kid} signs until then, then is retiring: it verifies its tokens until they expire.`,
        ]
      : [
          `New active key ${d.key.kid} (${d.key.alg}) signs from now on.`,
          ...d.retiring.map((k) => `Key ${k.kid} is retiring: it verifies tokens until ${t(k.verifiesUntil)}, then retires.`),
        ]),
  ],
})

export async function keysRevoke(deps: StoreDeps, args: { kid: string; yes: boolean }): Promise<{ revoked: KeyDoc; active: KeyDoc | null; replaced: KeyDoc[] }> {
  const key = await deps.admin.checkRevokeKey(args.kid)
  // tokens signed with the key stop verifying at once; the active key's replacement also
  // replaces a key still next, which the question names
  const next = key.state === 'active' ? (await deps.admin.listKeys()).filter((k) => k.state === 'next').map((k) => k.kid) : []
  const replace = key.state === 'active' ? ` (the active key: a new key replaces it first${next.length === 0 ? '' : `, and replaces the next key ${next.join(', ')}`})` : ''
  await deps.confirm(`revoke key ${key.kid}${replace}`, args.yes)
  const r = await deps.admin.revokeKey(key.kid)
  return { revoked: keyDoc(r.revoked), active: r.active === null ? null : keyDoc(r.active), replaced: r.replaced.map(keyDoc) }
}
export const keysRevokeView = (d: { revoked: KeyDoc; active: KeyDoc | null; replaced: KeyDoc[] }): View => ({
  lines: [
    ...(d.active === null ? [] : [`New active key ${d.active.kid} (${d.active.alg}) signs from now on.`]),
    ...d.replaced.map((k) => `Key ${k.kid} (${k.alg}), which had not signed yet, was replaced by it.`),
    `Revoked key ${d.revoked.kid}: tokens signed with it no longer verify.`,
  ],
})
