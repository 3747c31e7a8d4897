// imported by every test process before anything else (tap's importLoader, see plugin.cjs)
import { register } from 'node:module'

register('./hooks.mjs', import.meta.url)
register('./files.mjs', import.meta.url)
