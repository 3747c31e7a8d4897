/**
 * A look at an LMDB data file before LMDB maps it. LMDB takes its file on trust: a file cut
 * short (a copy that ran out of space, a restore interrupted) kills the process with SIGBUS the
 * moment LMDB touches a page past its end, with no word of why. Here the pages LMDB reads when it
 * opens the store are checked to be in the file: its two meta pages, and the root page of every
 * B-tree the newest meta names (the free list, the main database, and each named database in
 * it). A file this check cannot read as the format authd's lmdb writes (page header of 24 bytes,
 * data version 2) is left to LMDB: the check only refuses what it has understood.
 *
 * It cannot see a page missing below a root (a tree's deeper pages are not walked): such a file
 * still opens, and fails when that page is read.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'

const MAGIC = 0xbeefc0de
/** lmdb's format: MDB_page's header with its txnid (PAGEHDRSZ 24), MDB_DATA_VERSION 2 */
const PAGE_HEADER = 24
const DATA_VERSION = 2
/** MDB_db: md_pad u32, md_flags u16, md_depth u16, then branch, leaf, overflow pages, entries, root (u64 each) */
const DB_SIZE = 48
/** where MDB_meta's fields sit, from the start of the meta (after the page header) */
const META = { magic: 0, version: 4, dbs: 24, lastPage: 24 + 2 * DB_SIZE, txnid: 24 + 2 * DB_SIZE + 8 }
const NO_PAGE = 0xffffffffffffffffn
const P_LEAF = 0x02
const F_SUBDATA = 0x02

interface Db {
  depth: number
  root: bigint
}

const dbAt = (b: Buffer, at: number): Db => ({ depth: b.readUInt16LE(at + 6), root: b.readBigUInt64LE(at + 40) })

/**
 * Why `file` cannot be an intact LMDB data file, as the end of a sentence; undefined when it
 * looks whole (or is not in the format this check reads). An empty file is not judged here.
 */
export function lmdbFileProblem(file: string): string | undefined {
  const fd = openSync(file, 'r')
  try {
    const read = (offset: number, length: number): Buffer => {
      const b = Buffer.alloc(length)
      return b.subarray(0, readSync(fd, b, 0, length, offset))
    }
    // The pages are read first and the file's size taken last: a daemon committing meanwhile
    // writes a commit's pages before the meta that names them, so a size taken after the read
    // covers every page that meta names.
    const first = read(0, PAGE_HEADER + META.txnid + 8)
    if (first.length === 0) return undefined
    if (first.length < PAGE_HEADER + META.txnid + 8) return `it is ${fstatSync(fd).size} bytes, too short to hold its header`
    if (first.readUInt32LE(PAGE_HEADER + META.magic) !== MAGIC || first.readUInt32LE(PAGE_HEADER + META.version) !== DATA_VERSION) return undefined
    // the page size is kept in the free list's md_pad
    const pageSize = first.readUInt32LE(PAGE_HEADER + META.dbs)
    if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return undefined
    const second = read(pageSize, first.length)
    const metas = [first, second]
      .filter((b) => b.length === first.length && b.readUInt32LE(PAGE_HEADER + META.magic) === MAGIC)
      .map((b) => ({
        txnid: b.readBigUInt64LE(PAGE_HEADER + META.txnid),
        free: dbAt(b, PAGE_HEADER + META.dbs),
        main: dbAt(b, PAGE_HEADER + META.dbs + DB_SIZE),
      }))
    // LMDB opens the newest commit
    const meta = metas.reduce((a, b) => (b.txnid > a.txnid ? b : a))
    const roots: Array<[what: string, root: bigint]> = [
      ['its free list', meta.free.root],
      ['its main database', meta.main.root],
    ]
    // the main database in one leaf page (authd has 16 named databases at most): each named database's root
    const page = meta.main.root === NO_PAGE || meta.main.depth !== 1 ? Buffer.alloc(0) : read(Number(meta.main.root) * pageSize, pageSize)
    if (page.length === pageSize && page.readBigUInt64LE(0) === meta.main.root && (page.readUInt16LE(18) & P_LEAF) !== 0) {
      const count = page.readUInt16LE(20) >> 1
      for (let i = 0; i < count && PAGE_HEADER + 2 * i + 2 <= pageSize; i++) {
        // a node's offset counts from the end of the page header
        const node = PAGE_HEADER + page.readUInt16LE(PAGE_HEADER + 2 * i)
        if (node + 8 > pageSize) break
        const dataSize = page.readUInt16LE(node) | (page.readUInt16LE(node + 2) << 16)
        const flags = page.readUInt16LE(node + 4)
        const keySize = page.readUInt16LE(node + 6)
        const data = node + 8 + keySize
        if ((flags & F_SUBDATA) === 0 || dataSize !== DB_SIZE || data + DB_SIZE > pageSize) continue
        roots.push([`its database ${JSON.stringify(page.toString('latin1', node + 8, data).replace(/\0+$/, ''))}`, dbAt(page, data).root])
      }
    }

    const size = fstatSync(fd).size
    if (size < 2 * pageSize || second.length < first.length) return `it is ${size} bytes, shorter than its two meta pages (${2 * pageSize} bytes)`
    const pages = BigInt(Math.floor(size / pageSize))
    for (const [what, root] of roots) {
      if (root !== NO_PAGE && root >= pages) return `it holds ${pages} pages, and the root of ${what} is page ${root}`
    }
    return undefined
  } finally {
    closeSync(fd)
  }
}
