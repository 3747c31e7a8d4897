/**
 * The log-hygiene case's refresh-token search (stress/cases/log-hygiene.mjs): a token the run
 * handed out is found in a log whole or by its secret part alone, and nothing else is.
 */
import t from 'tap'
import { refreshLeaks } from '../../stress/cases/log-hygiene.mjs'
import { newRefreshToken } from '../../src/core/sessions.js'

t.test('a refresh token in a log line is found, whole or by its secret part; other tokens and strings are not', async (t) => {
  const known = newRefreshToken()
  const other = newRefreshToken()
  const [, secret] = known.split('.')
  t.equal(refreshLeaks(`{"msg":"refreshed","token":"${known}"}\n`, new Set([known])), 1, 'whole, in JSON')
  t.equal(refreshLeaks(`cookie: authd_rt=${known}; Path=/api/auth\n`, new Set([known])), 1, 'whole, in a cookie header')
  t.equal(refreshLeaks(`secret=${secret}\n`, new Set([known])), 1, 'its secret part alone')
  t.equal(refreshLeaks(`${known} ${known}\n`, new Set([known])), 2, 'each time')
  t.equal(refreshLeaks(`{"token":"${other}"}\n`, new Set([known])), 0, 'a token the run did not hand out')
  t.equal(refreshLeaks(`{"id":"${'a'.repeat(43)}"}\n`, new Set([known])), 0, 'any 43 characters')
  t.equal(refreshLeaks(`{"x":"${secret}x"}\n`, new Set([known])), 0, 'the secret inside a longer run')
})
