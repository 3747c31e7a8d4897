#!/usr/bin/env node
import { endQuietlyOnClosedPipe } from '../dist/closed-pipe.js'
import { main } from '../dist/cli/main.js'
endQuietlyOnClosedPipe()
process.exitCode = await main({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd(), stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s), drained: () => new Promise((r) => process.stdout.once('drain', r)) })
