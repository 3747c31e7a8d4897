/** The package version, as `authd version` and `authctl version` print it. */
import { readFileSync } from 'node:fs'

export const version = (): string =>
  (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version
