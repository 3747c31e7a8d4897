/** The authctl command (placeholder until its commands land). */
export async function main(io: { argv: string[]; stdout: (s: string) => void; stderr: (s: string) => void }): Promise<number> {
  io.stdout('Usage: authctl <command>\n\nCommands: user, keys, sessions, smoke, backup, tui\n')
  return io.argv.length === 0 || io.argv.includes('--help') ? 0 : 2
}
