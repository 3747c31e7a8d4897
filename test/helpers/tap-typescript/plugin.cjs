'use strict'
/**
 * A tap plugin, used in place of tap's own TypeScript plugin (package.json "tap".plugin): every
 * test process imports ./import.mjs first, whose module hooks (./hooks.mjs) run the .ts and .tsx
 * files it imports, each transpiled once and then taken from a cache (node_modules/.cache/authd-ts). tap's own plugin
 * loads ts-node and the whole compiler into every test process, which was most of a small test
 * file's time. Its other hooks (./files.mjs) let several test files share a test process, each
 * with a subtest of its own for its `t` (test/helpers/file-group.ts).
 */
exports.importLoader = 'authd-tap-typescript/import'
// where node has no module.register() (20.0 to 20.5), the same hooks as a --loader
exports.loader = 'authd-tap-typescript/hooks'
exports.preload = true
exports.testFileExtensions = ['ts', 'tsx']
