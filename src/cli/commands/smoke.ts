/** authctl smoke: the smoke steps against a running daemon; the only command that talks HTTP. */
import type { BaseDeps } from '../deps.js'
import { AppError, quoted } from '../../errors.js'
import { type View } from '../output.js'
import type { SmokeResult } from '../../client/smoke-steps.js'

export async function smoke(deps: BaseDeps, args: { url?: string; email: string; passwordStdin: boolean; timeoutMs: number }): Promise<SmokeResult> {
  // the URL clients use (server.public_url, which defaults to http://<host>:<port>)
  const url = args.url ?? (await deps.config()).server.publicUrl
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new AppError('SMOKE_URL_INVALID', { params: { what: '--url', url: quoted(url) } })
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new AppError('SMOKE_URL_INVALID', { params: { what: '--url', url: quoted(url) } })
  }
  if (args.email.trim() === '') throw new AppError('SMOKE_EMAIL_EMPTY')
  const password = await deps.password(args.passwordStdin)
  const { runSmoke } = await import('../../client/smoke-steps.js')
  return runSmoke({ url: parsed.origin + parsed.pathname, email: args.email, password, timeoutMs: args.timeoutMs })
}

export const smokeView = (r: SmokeResult): View => ({
  table: {
    columns: ['', 'STEP', 'REQUEST', 'STATUS', 'TIME', ''],
    rows: r.steps.map((s) => [
      s.outcome === 'passed' ? 'ok' : s.outcome === 'failed' ? 'FAIL' : 'skip',
      `${s.index} ${s.name}`,
      `${s.method} ${s.path}`,
      s.status === null ? '-' : String(s.status),
      s.outcome === 'skipped' ? '-' : `${s.ms} ms`,
      s.error ?? '',
    ]),
  },
  note: r.ok ? `All ${r.steps.length} steps passed against ${r.url} in ${r.totalMs} ms.` : undefined,
})

/** the one stderr sentence for a failed run */
export const smokeFailure = (r: SmokeResult): string | null => {
  const step = r.steps.find((s) => s.outcome === 'failed')
  return step === undefined ? null : `Smoke test failed at step ${step.index} (${step.name}): ${step.error}.`
}
