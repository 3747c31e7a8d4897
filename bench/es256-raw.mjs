/**
 * The "es256-raw" baseline: jsonwebtoken ES256 verifications per second on one thread, with a
 * KeyObject built once, over the same distinct tokens the /me row sends, with the same checks
 * (algorithm pinned, issuer, audience, clock tolerance). Prints one JSON line.
 * args: tokens-file public-key-pem-file seconds issuer audience
 */
import { readFileSync } from 'node:fs'
import { createPublicKey } from 'node:crypto'
import jwt from 'jsonwebtoken'

const [tokensFile, pemFile, secondsText, issuer, audience] = process.argv.slice(2)
const tokens = readFileSync(tokensFile, 'utf8').split('\n').filter((l) => l !== '')
const key = createPublicKey(readFileSync(pemFile, 'utf8'))
const options = { algorithms: ['ES256'], issuer, audience, clockTolerance: 5 }
let i = 0

function run(ms) {
  const end = performance.now() + ms
  let n = 0
  let t = performance.now()
  while (t < end) {
    // a batch between clock reads, so reading the clock costs nothing measurable
    for (let b = 0; b < 64; b++) {
      jwt.verify(tokens[i], key, options)
      i = (i + 1) % tokens.length
    }
    n += 64
    t = performance.now()
  }
  return n
}

run(500) // warm-up: JIT and OpenSSL tables
const ms = Number(secondsText) * 1000
const started = performance.now()
const n = run(ms)
const elapsed = (performance.now() - started) / 1000
process.stdout.write(`${JSON.stringify({ ops: n, seconds: elapsed, perSecond: n / elapsed })}\n`)
