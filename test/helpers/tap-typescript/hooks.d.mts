// the types of hooks.mjs, for test/helpers/tap-typescript.test.ts and test/suite.mjs's readers
export declare const CACHE_DIR: string
export declare const compilerOptions: Record<string, unknown>
export declare let transpiledHere: number
export declare function cacheFile(path: string, source: string): string
export declare function transpiled(path: string, source: string): string
export declare function warm(dirs?: string[]): { files: number; transpiled: number }
export declare function typescriptTwins(specifier: string): string[]
export declare function resolve(specifier: string, context: object, nextResolve: (specifier: string, context?: object) => Promise<unknown>): Promise<unknown>
export declare function load(url: string, context: object, nextLoad: (url: string, context?: object) => Promise<unknown>): Promise<unknown>
