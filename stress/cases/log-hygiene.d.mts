/** Types of log-hygiene.mjs, for the tests that import it. */
export declare const id: string
export declare const title: string
export declare function refreshLeaks(text: string, tokens: Iterable<string>): number
export declare function run(ctx: { say: (line: string) => void }): Promise<void>
