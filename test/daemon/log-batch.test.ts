/**
 * The daemon's log destination gathers lines and hands them over in batches (daemon/logger.ts
 * LineBatch): nothing is lost, the order is kept, and what is gathered is written at exit, even
 * by process.exit.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createLogger, LineBatch, requestLineWriter } from '../../src/daemon/logger.js'

function output(): { writes: string[]; flushes: number; syncFlushes: number; out: ConstructorParameters<typeof LineBatch>[0] } {
  const o = {
    writes: [] as string[],
    flushes: 0,
    syncFlushes: 0,
    out: {
      write: (text: string) => o.writes.push(text),
      flush: (cb?: (err?: Error) => void) => {
        o.flushes++
        cb?.()
      },
      flushSync: () => {
        o.syncFlushes++
      },
    },
  }
  return o
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

t.test('lines are handed over once a batch is full, in order, and nothing before', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 100, 60_000)
  t.teardown(() => batch.flushSync())
  batch.write('a'.repeat(40) + '\n')
  batch.write('b'.repeat(40) + '\n')
  t.same(o.writes, [], 'under the batch size: gathered')
  batch.write('c'.repeat(40) + '\n')
  t.same(o.writes, ['a'.repeat(40) + '\n' + 'b'.repeat(40) + '\n' + 'c'.repeat(40) + '\n'], 'full: one write with all three')
})

t.test('a batch that does not fill is handed over after the delay', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 12_288, 30)
  batch.write('one\n')
  batch.write('two\n')
  t.same(o.writes, [])
  await sleep(80)
  t.same(o.writes, ['one\ntwo\n'])
  await sleep(80)
  t.same(o.writes, ['one\ntwo\n'], 'no empty writes afterwards')
})

t.test('flush and flushSync hand over what is gathered first', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 12_288, 60_000)
  batch.write('x\n')
  await new Promise<void>((resolve) => batch.flush(() => resolve()))
  t.same(o.writes, ['x\n'])
  t.equal(o.flushes, 1)
  batch.write('y\n')
  batch.flushSync()
  t.same(o.writes, ['x\n', 'y\n'])
  t.equal(o.syncFlushes, 1)
})

t.test('pino lines and request lines share the batch and keep their order', async (t) => {
  const o = output()
  const batch = new LineBatch(o.out, 12_288, 60_000)
  const log = createLogger({ level: 'info', destination: batch })
  const request = requestLineWriter(log)
  log.info({ event: 'first' }, 'first')
  request('a-1', 'GET', '/api/auth/me', 200, 0.5)
  log.warn({ event: 'third' }, 'third')
  batch.flushSync()
  const lines = o.writes.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.same(
    lines.map((l) => l.msg),
    ['first', 'request', 'third'],
  )
  t.equal(lines[1]!.reqId, 'a-1')
})

t.test('a process that exits at once (process.exit) still writes its gathered lines, flushed on exit as the daemon does', async (t) => {
  const logger = fileURLToPath(new URL('../../dist/daemon/logger.js', import.meta.url))
  const script = `
    const { createLogger, flushLogSync, requestLineWriter } = await import(${JSON.stringify(logger)})
    const log = createLogger({ level: 'info' })
    process.once('exit', () => flushLogSync(log))
    requestLineWriter(log)('b-1', 'GET', '/healthz', 200, 1)
    log.fatal({ event: 'boom' }, 'uncaught exception')
    process.exit(3)
  `
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 })
  t.equal(r.status, 3)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.same(
    lines.map((l) => [l.level, l.msg]),
    [
      ['info', 'request'],
      ['fatal', 'uncaught exception'],
    ],
  )
})

t.test('a process that ends by itself waits for its last lines (at most the delay)', async (t) => {
  const logger = fileURLToPath(new URL('../../dist/daemon/logger.js', import.meta.url))
  const script = `
    const { createLogger } = await import(${JSON.stringify(logger)})
    createLogger({ level: 'info' }).info({ event: 'last' }, 'the last line')
  `
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 })
  t.equal(r.status, 0)
  t.match(r.stdout, /"msg":"the last line"/)
})
