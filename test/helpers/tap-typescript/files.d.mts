// the types of files.mjs, for test/helpers/file-group.test.ts
export declare function resolve(specifier: string, context: { parentURL?: string }, nextResolve: (specifier: string, context?: object) => Promise<unknown>): Promise<unknown>
export declare function load(url: string, context: object, nextLoad: (url: string, context?: object) => Promise<unknown>): Promise<unknown>
