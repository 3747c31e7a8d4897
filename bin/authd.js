#!/usr/bin/env node
import { main } from '../dist/daemon/main.js'
process.exitCode = await main({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd(), stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) })
