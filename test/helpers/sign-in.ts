/** A password login through the use-case, for tests of users without a second factor. */
import type { ClientContext, SignedIn } from '../../src/core/auth-service.js'
import type { Services } from '../../src/daemon/services.js'

export async function signIn(app: Pick<Services, 'auth'>, body: Record<string, unknown>, client: ClientContext): Promise<SignedIn> {
  const result = await app.auth.login(body, client)
  if ('mfaRequired' in result) throw new Error('this user has a second factor: sign in with auth.loginMfa')
  return result
}
