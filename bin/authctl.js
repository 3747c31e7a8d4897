#!/usr/bin/env node
import { main } from '../dist/cli/main.js'
// A reader that stops early (`authctl audit list | head`) leaves the rest of the output nowhere
// to go: that is the reader's choice, not an error of authctl's. Without a listener the failed
// write would end the process with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err
    process.exit(process.exitCode ?? 0)
  })
}
process.exitCode = await main({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd(), stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s), drained: () => new Promise((r) => process.stdout.once('drain', r)) })
