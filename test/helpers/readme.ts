/**
 * The README's code blocks, as the tests that run them read them, and the one way those tests run
 * a VM admin's lines on the test machine.
 *
 * A block is named by its nearest heading and its place under it ("Back up and restore #2");
 * test/readme-blocks.test.ts lists every block and what runs it.
 *
 * The VM of "Deploy on a VM" is not the test machine: there is no `authd` system user, no systemd,
 * and /etc, /var and /run are not the tests' to write. So a VM block runs with its paths in a
 * directory of the test's own (VmPlaces), the authd user's part played by the user running the
 * tests, and `sudo` a stand-in (writeSudo) that runs the command itself, or as another user that
 * exists (`sudo -u postgres`, where the tests run as root). Lines that need systemd are not run
 * by the shell: the test does what the unit would (stop: SIGTERM; start: the unit's ExecStart).
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './app.js'

export const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

export interface Block {
  /** "<heading> #<n>" */
  id: string
  lang: string
  text: string
  /** line of the opening fence in README.md */
  line: number
}

/** the fenced blocks of `md`, each named by its nearest heading and its place under it */
export function readmeBlocks(md: string = README): Block[] {
  const lines = md.split('\n')
  const out: Block[] = []
  const seen = new Map<string, number>()
  let heading = '(top)'
  for (let i = 0; i < lines.length; i++) {
    const h = /^#{1,6} (.+)$/.exec(lines[i]!)
    if (h !== null) heading = h[1]!.trim()
    const fence = /^```(\w*)$/.exec(lines[i]!)
    if (fence === null) continue
    let end = i + 1
    while (end < lines.length && lines[end] !== '```') end++
    const n = (seen.get(heading) ?? 0) + 1
    seen.set(heading, n)
    out.push({ id: `${heading} #${n}`, lang: fence[1]!, text: lines.slice(i + 1, end).join('\n'), line: i + 1 })
    i = end
  }
  return out
}

/** the README's block `id`; throws when there is none */
export function readmeBlock(id: string): Block {
  const b = readmeBlocks().find((x) => x.id === id)
  if (b === undefined) throw new Error(`README.md has no block ${id}`)
  return b
}

/** a shell line without its trailing comment */
export const withoutComment = (line: string): string => line.replace(/\s+#.*$/, '').trim()

/** Where the VM's paths are on the test machine, and who plays the authd user there. */
export interface VmPlaces {
  /** /etc/authd */
  etc: string
  /** /var/lib/authd, the store (store.path of config/auth.toml) */
  lib: string
  /** /var/backups/authd */
  backups: string
  /** /run/authd/authd.sock, where a test's authd listens as the unit's does */
  socket?: string
  /** the user and group in the place of `authd` (`install -o authd -g authd`) */
  user: string
  group: string
}

/** the user running the tests, and its group: the authd user's part on the test machine */
export function testUser(): { user: string; group: string } {
  return { user: userInfo().username, group: execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim() }
}

/** `text` (lines of a VM block, or config/auth.toml) with the VM's paths and owner in `places` */
export function onTestMachine(text: string, places: VmPlaces): string {
  let out = text
    .replaceAll('/etc/authd/', `${places.etc}/`)
    .replaceAll('/var/lib/authd', places.lib)
    .replaceAll('/var/backups/authd', places.backups)
    .replaceAll('-o authd -g authd', `-o ${places.user} -g ${places.group}`)
  if (places.socket !== undefined) out = out.replaceAll('/run/authd/authd.sock', places.socket)
  return out
}

/**
 * config/auth.toml installed as the VM's /etc/authd/auth.toml, its paths moved as onTestMachine
 * moves them; returns the file's path.
 */
export function installVmConfig(places: VmPlaces): string {
  mkdirSync(places.etc, { recursive: true })
  const file = join(places.etc, 'auth.toml')
  writeFileSync(file, onTestMachine(readFileSync(join(ROOT, 'config', 'auth.toml'), 'utf8'), places))
  return file
}

/**
 * Writes `sudo` into `dir` (put it first on PATH): `sudo CMD…` runs CMD; `sudo -u USER CMD…` runs it
 * as USER where the tests run as root and USER exists (setpriv, as sudo would), and as the test's
 * own user otherwise. `-u authd` is always the test's own user: it plays the authd user (whose
 * files here are the test's).
 */
export function writeSudo(dir: string): string {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'sudo')
  writeFileSync(
    file,
    [
      '#!/bin/sh',
      '# a stand-in for sudo in the tests (test/helpers/readme.ts)',
      'if [ "$1" = -u ]; then',
      '  user=$2; shift 2',
      '  if [ "$user" != authd ] && [ "$(id -u)" = 0 ] && id -u "$user" >/dev/null 2>&1; then',
      '    exec setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- "$@"',
      '  fi',
      'fi',
      'exec "$@"',
      '',
    ].join('\n'),
  )
  chmodSync(file, 0o755)
  return dir
}

/** A line of a VM block that systemd would carry out: `sudo systemctl stop|start|restart <unit>` */
export function systemctlLine(line: string): { action: string; unit: string } | null {
  const m = /^sudo systemctl (stop|start|restart) (\S+)$/.exec(withoutComment(line))
  return m === null ? null : { action: m[1]!, unit: m[2]! }
}
