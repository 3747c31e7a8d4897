// the types of hooks.mjs, for test/helpers/tap-typescript.test.ts and test/suite.mjs's readers
export declare const CACHE_DIR: string
export declare const compilerOptions: Record<string, unknown>
export declare let transpiledHere: number
export declare function cacheFile(path: string, source: string): string
export declare function transpiled(path: string, source: string): string
export declare function warm(dirs: string[]): { files: number; transpiled: number }
export declare function typescriptTwins(specifier: string): string[]
