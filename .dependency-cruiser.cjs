// The dependency rules of docs/architecture.md, checked by `npm test` (scripts/test.sh): a violation
// fails the test command. tests/unit/dependency-rules.test.ts proves each rule catches what it forbids.
// A test beside its code (src/**/*.test.ts) imports what the tests under tests/ may: the rules are for
// the code that ships, and no shipped file imports a test (so none is in a bundle).
const TEST = '\\.test\\.ts$'
/** The files that must stay pure: every module's domain/, and the pure.ts entry that offers it to others. */
const PURE = '^src/modules/[^/]+/(domain/|pure\\.ts$)'
const IO_LIBRARIES = 'node_modules/(elysia|drizzle-orm|@libsql|libsql|@upstash)/'
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'kernel-imports-no-module',
      comment: 'The kernel is shared infrastructure: it knows no module (modules plug in through src/main).',
      severity: 'error',
      from: { path: '^src/kernel/', pathNot: TEST },
      to: { path: '^src/modules/' },
    },
    {
      name: 'module-through-index',
      comment:
        "A module uses another only through that module's index.ts (its ports and event types), or its pure.ts " +
        '(the pure functions it offers to domain/ code).',
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/', pathNot: TEST },
      to: {
        path: '^src/modules/[^/]+/',
        pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/(index|pure)\\.ts$'],
      },
    },
    {
      name: 'entries-through-index',
      comment: 'The entries list modules; they reach none of their internals.',
      severity: 'error',
      from: { path: '^src/main/', pathNot: TEST },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'domain-is-pure',
      comment:
        'domain/ (and a pure.ts entry) holds pure functions of their inputs: no database, cache, HTTP, clock of ' +
        "the host or I/O; another module's code only through its pure.ts (its index.ts loads the module).",
      severity: 'error',
      from: { path: PURE, pathNot: TEST },
      to: {
        path: [
          '^src/kernel/(db|cache|http|events|jobs|storage)/',
          '^src/modules/[^/]+/(?!domain/|pure\\.ts$)',
          '^(node:)?(fs|net|http|https|child_process|worker_threads)$',
          '^bun$',
          IO_LIBRARIES,
        ],
      },
    },
    {
      name: 'domain-reaches-no-io',
      comment:
        'domain-is-pure on everything a pure file reaches, not only on what it imports: no chain of imports ' +
        'from domain/ ends in the database, cache, HTTP, events, jobs, storage or their libraries.',
      severity: 'error',
      from: { path: PURE, pathNot: TEST },
      to: {
        path: [
          '^src/kernel/(db|cache|http|events|jobs|storage|bus)/',
          '^src/kernel/redis\\.ts$',
          '^(node:)?(fs|net|http|https|child_process|worker_threads)$',
          '^bun$',
          IO_LIBRARIES,
        ],
        reachable: true,
      },
    },
    {
      name: 'no-source-imports-tests',
      comment: 'Shipped code imports no test, benchmark or script, beside it or under tests/.',
      severity: 'error',
      from: { path: '^src/', pathNot: TEST },
      to: { path: ['^(tests|bench|scripts)/', TEST] },
    },
    {
      name: 'no-circular-modules',
      comment: 'Modules form a list, each built on the ones before it (ports); no cycle between their files.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|\\.tools)/' },
  },
}
