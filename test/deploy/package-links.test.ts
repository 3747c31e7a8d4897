/**
 * What the README and docs/ link to ships in the package: every relative link in README.md and
 * docs/*.md names a file that `npm pack` puts in the tarball (the one the README's deploy step
 * installs), and every `#anchor` of such a link names a heading of the file it points into.
 */
import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ROOT } from '../helpers/app.js'

const run = promisify(execFile)

/** the documents whose links are checked: the README and every page under docs/ */
const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** relative links `[text](target)` outside code spans and blocks, as the file's path and its anchor */
function relativeLinks(doc: string): Array<{ file: string; anchor: string | undefined; raw: string }> {
  const text = readFileSync(join(ROOT, doc), 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '``')
  const out = []
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const raw = m[1]!
    if (/^[a-z][a-z0-9+.-]*:/i.test(raw)) continue // https:, mailto:
    const [path, anchor] = raw.split('#') as [string, string | undefined]
    // a bare #anchor points into the document itself
    out.push({ file: path === '' ? doc : normalize(join(dirname(doc), path)), anchor, raw })
  }
  return out
}

/** GitHub's heading anchors: lower case, punctuation dropped (but - and _), spaces as hyphens */
function anchors(doc: string): Set<string> {
  const text = readFileSync(join(ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, '')
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

t.test('every relative link in README.md and docs/ points to a file the package holds', async (t) => {
  const packed = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, timeout: 60_000 })
  const files = new Set((JSON.parse(packed.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path))
  let links = 0
  for (const doc of documents) {
    t.ok(files.has(doc), `the package holds ${doc}`)
    for (const link of relativeLinks(doc)) {
      links++
      t.ok(files.has(link.file), `${doc}: (${link.raw}) is in the package as ${link.file}`)
      if (link.anchor !== undefined && link.file.endsWith('.md')) t.ok(anchors(link.file).has(link.anchor), `${doc}: (${link.raw}) names a heading of ${link.file}`)
    }
  }
  const readmeLinks = relativeLinks('README.md').map((l) => l.file)
  t.ok(readmeLinks.includes('docs/api.md'), 'the README links the API reference')
  t.ok(readmeLinks.some((f) => f.startsWith('examples/')), 'and an example')
  t.ok(links >= 20, `${links} relative links checked`)
})

t.test('the anchor rule above is GitHub\'s', async (t) => {
  // headings of docs/api.md whose anchors its own table of contents uses
  const api = anchors('docs/api.md')
  for (const a of ['every-response', 'post-apiauthloginmfa', 'options-apiauth-cors-preflight', 'browsers-cors-and-the-origin-check', 'the-users-own-account']) t.ok(api.has(a), a)
})
