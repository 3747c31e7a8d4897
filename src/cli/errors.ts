/**
 * The errors authctl itself raises. Exit codes (README, "Administer with authctl"): 0 success, 1 the operation
 * failed, 2 usage or config error. Each message is one plain sentence for stderr.
 */

/** Bad usage the parser cannot see: conflicting flags, a missing --yes without a terminal. Exit 2. */
export class UsageError extends Error {
  readonly code = 'USAGE'
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** The operation did not happen or did not pass (cancelled, passwords differ, smoke failed). Exit 1. */
export class FailedError extends Error {
  readonly code = 'FAILED'
  constructor(message: string) {
    super(message)
    this.name = 'FailedError'
  }
}
