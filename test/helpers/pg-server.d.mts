/** Types of pg-server.mjs (the part of the test PostgreSQL that pg.ts uses). */
export interface PgBin {
  bin: string
  version: number
  /** the postgres user's ids when running as root; null otherwise */
  user: { uid: number; gid: number } | null
}
export interface PgMissing {
  /** one sentence: what is missing, that the PostgreSQL tests skip, how to install */
  missing: string
}
export const MIN_VERSION: number
export const INSTALL_HINT: string
export const TEMPLATE: string
export function findPgBin(): PgBin | PgMissing
export function initServer(pg: PgBin, dir: string, opts?: { durable?: boolean }): Promise<string>
export function startServer(pg: PgBin, dir: string, opts?: { durable?: boolean }): Promise<void>
export function stopServer(pg: PgBin, dir: string, mode?: 'smart' | 'fast' | 'immediate'): Promise<void>
export function destroyServerSync(pg: PgBin, dir: string): void
export function pgUrl(sock: string, database?: string): string
export function sharedDir(): string
export function attachShared(pg: PgBin): Promise<string>
export function stopShared(): Promise<void>
