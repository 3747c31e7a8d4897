/**
 * Reading passwords for authctl. A password is never a command-line argument (it would sit in
 * the shell history and in `ps` for every user to read): it comes from standard input with
 * `--password-stdin`, or from a hidden prompt on a terminal. Prompts go to stderr, so stdout
 * keeps only the command's output (one JSON document with --json).
 */
import { StringDecoder } from 'node:string_decoder'
import { AppError } from '../errors.js'

export interface TerminalInput extends NodeJS.ReadableStream {
  isTTY?: boolean
  setRawMode?(mode: boolean): unknown
}

export interface PasswordIo {
  input: TerminalInput
  /** where prompts are written (stderr) */
  prompt: (text: string) => void
}

/** more than any configurable password (passwords.max_length ≤ 4096 code points) */
export const MAX_PASSWORD_INPUT_BYTES = 64 * 1024

export const processPasswordIo = (): PasswordIo => ({ input: process.stdin, prompt: (s) => process.stderr.write(s) })

/**
 * Reads `input` up to its first newline or its end, whichever comes first. The newline (and a
 * `\r` before it) is not part of the line; what follows it is discarded (a pipe is closed). Resolves
 * to null if the input ended before any byte arrived.
 */
export function readFirstLine(input: NodeJS.ReadableStream, maxBytes: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = (): void => {
      input.removeListener('data', onData)
      input.removeListener('end', onEnd)
      input.removeListener('error', onError)
      input.pause()
      // a paused pipe keeps reading into its buffer and holds the process open until the writer
      // closes it; the rest of the input is not ours to read, so let go of it
      if ((input as TerminalInput).isTTY !== true) (input as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.()
    }
    const finish = (sawNewline: boolean): void => {
      cleanup()
      let bytes = Buffer.concat(chunks)
      if (!sawNewline && bytes.length === 0) return resolve(null)
      if (sawNewline && bytes.at(-1) === 0x0d) bytes = bytes.subarray(0, -1)
      try {
        resolve(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
      } catch {
        reject(new AppError('STDIN_NOT_UTF8'))
      }
    }
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk
      const nl = buf.indexOf(0x0a)
      const part = nl === -1 ? buf : buf.subarray(0, nl)
      size += part.length
      if (size > maxBytes) {
        cleanup()
        return reject(new AppError('STDIN_LINE_TOO_LONG', { params: { max: maxBytes } }))
      }
      chunks.push(part)
      if (nl !== -1) finish(true)
    }
    const onEnd = (): void => finish(false)
    const onError = (err: Error): void => {
      cleanup()
      reject(err)
    }
    input.on('data', onData)
    input.once('end', onEnd)
    input.once('error', onError)
    input.resume()
  })
}

/** `--password-stdin`: the first line of standard input (README, "Administer with authctl"). */
export async function readPasswordFromStdin(input: NodeJS.ReadableStream): Promise<string> {
  const line = await readFirstLine(input, MAX_PASSWORD_INPUT_BYTES)
  if (line === null || line === '') throw new AppError('NO_PASSWORD_ON_STDIN')
  return line
}

/**
 * Asks for a password on a terminal without echoing it: raw mode, so the terminal shows nothing
 * while the user types. Backspace and Ctrl-U edit; Enter ends; Ctrl-C or Ctrl-D cancel. Raw mode
 * is on before the question shows, so nothing typed once it shows is ever echoed (the other order
 * left a moment in which the terminal itself echoed a fast typist's keys).
 *
 * What arrived after the Enter in the same read (typed ahead, or both lines pasted at once) is
 * kept in `ahead` for the next prompt that is given it, rather than dropped.
 */
export function promptHidden(io: PasswordIo, question: string, ahead: { text: string } = { text: '' }): Promise<string> {
  const { input } = io
  input.setRawMode!(true)
  io.prompt(question)
  return new Promise((resolve, reject) => {
    let chars: string[] = []
    let finished = false
    const decoder = new StringDecoder('utf8')
    const done = (err?: Error): void => {
      finished = true
      input.removeListener('data', onData)
      input.removeListener('end', onEnd)
      input.setRawMode!(false)
      input.pause()
      io.prompt('\n')
      if (err !== undefined) reject(err)
      else resolve(chars.join(''))
    }
    const onEnd = (): void => done(new AppError('CANCELLED'))
    const feed = (text: string): void => {
      for (let i = 0; i < text.length; ) {
        const ch = String.fromCodePoint(text.codePointAt(i)!)
        i += ch.length
        if (ch === '\r' || ch === '\n') {
          // one line end is \r, \n or \r\n: what follows it is the next prompt's
          ahead.text = text.slice(ch === '\r' && text[i] === '\n' ? i + 1 : i)
          return done()
        }
        if (ch === '\u0003') return done(new AppError('CANCELLED'))
        if (ch === '\u0004') return chars.length === 0 ? done(new AppError('CANCELLED')) : done()
        if (ch === '\u007f' || ch === '\b') chars.pop()
        else if (ch === '\u0015') chars = []
        // an escape sequence (arrow keys and the like): drop the rest of this chunk
        else if (ch === '\u001b') return
        else if (ch >= ' ' && !(ch >= '\u0080' && ch <= '\u009f')) chars.push(ch)
      }
    }
    const onData = (chunk: Buffer | string): void => feed(typeof chunk === 'string' ? chunk : decoder.write(chunk))
    const typed = ahead.text
    ahead.text = ''
    feed(typed)
    if (finished) return
    input.on('data', onData)
    input.once('end', onEnd)
    input.resume()
  })
}

const isTerminal = (input: TerminalInput): boolean => input.isTTY === true && typeof input.setRawMode === 'function'

/** A new password (user add, user passwd): from stdin, or asked twice on a terminal. */
export async function readNewPassword(opts: { passwordStdin: boolean; io?: PasswordIo }): Promise<string> {
  const io = opts.io ?? processPasswordIo()
  if (opts.passwordStdin) return readPasswordFromStdin(io.input)
  if (!isTerminal(io.input)) throw new AppError('PASSWORD_NEEDS_TERMINAL')
  // the repeat may have come in the same read as the first (pasted, or typed ahead)
  const ahead = { text: '' }
  const first = await promptHidden(io, 'New password: ', ahead)
  if (first === '') throw new AppError('NO_PASSWORD')
  const second = await promptHidden(io, 'Repeat the new password: ', ahead)
  if (first !== second) throw new AppError('PASSWORDS_DIFFER')
  return first
}

/** An existing password (smoke): from stdin, or asked once on a terminal. */
export async function readPassword(opts: { passwordStdin: boolean; io?: PasswordIo; question?: string }): Promise<string> {
  const io = opts.io ?? processPasswordIo()
  if (opts.passwordStdin) return readPasswordFromStdin(io.input)
  if (!isTerminal(io.input)) throw new AppError('PASSWORD_NEEDS_TERMINAL')
  const password = await promptHidden(io, opts.question ?? 'Password: ')
  if (password === '') throw new AppError('NO_PASSWORD')
  return password
}
