/** `authctl version` and `authctl --version` print the package version, as authd's do. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../helpers/app.js'
import { runCtl } from './run.js'

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version

t.test('authctl version, --version and -V print the version (regression: authctl had neither)', async (t) => {
  for (const args of [['version'], ['--version'], ['-V']]) {
    const r = await runCtl(args, { cwd: t.testdir() })
    t.equal(r.code, 0, args.join(' '))
    t.equal(r.stdout, `authctl ${VERSION}\n`, args.join(' '))
    t.equal(r.stderr, '', args.join(' '))
  }
  // --json promises one JSON document on stdout, whichever way the version is asked for
  for (const args of [['version', '--json'], ['--version', '--json'], ['--json', '-V'], ['--data', '/nowhere', '--version', '--json']]) {
    const json = await runCtl(args, { cwd: t.testdir() })
    t.equal(json.code, 0, args.join(' '))
    t.same(json.json(), { version: VERSION }, args.join(' '))
    t.equal(json.stderr, '', args.join(' '))
  }
})
