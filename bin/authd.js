#!/usr/bin/env node
import { main } from '../dist/daemon/main.js'
// A reader that stops early (`authd check-config | head`) leaves the rest of the output nowhere
// to go: that is the reader's choice, not an error of authd's, and authd ends quietly. A running
// daemon whose log goes nowhere is another matter: it ends with the error, for its supervisor
// to restart it.
const daemon = process.argv[2] === 'start'
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code !== 'EPIPE' || daemon) throw err
    process.exit(process.exitCode ?? 0)
  })
}
process.exitCode = await main({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd(), stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) })
