/**
 * A reader that stops early (`authctl audit list | head`, `authd check-config | head`) leaves the
 * rest of the output nowhere to go: that is the reader's choice, not an error of the program's,
 * which ends quietly with the exit code it had. Without a listener the failed write would end the
 * process with a stack trace. A running daemon whose log goes nowhere is another matter: with
 * `endWithError` it ends with the error, for its supervisor to restart it.
 */
export function endQuietlyOnClosedPipe(opts: { endWithError?: boolean } = {}): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' || opts.endWithError === true) throw err
      process.exit(process.exitCode ?? 0)
    })
  }
}
