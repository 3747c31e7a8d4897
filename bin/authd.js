#!/usr/bin/env node
import { endQuietlyOnClosedPipe } from '../dist/closed-pipe.js'
import { main } from '../dist/daemon/main.js'
// a running daemon whose log goes nowhere ends with the error; any other command ends quietly
endQuietlyOnClosedPipe({ endWithError: process.argv[2] === 'start' })
process.exitCode = await main({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd(), stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) })
