/**
 * tap's `after` hook (package.json "tap"): once every test file has finished, stops the shared
 * test PostgreSQL (pg-server.mjs), so a test run leaves no server and no files behind.
 */
import { stopShared } from './pg-server.mjs'

await stopShared()
