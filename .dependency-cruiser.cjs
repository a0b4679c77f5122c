/**
 * Architecture rules checked by `npm run check:deps` (part of `npm test`).
 * - No import cycles.
 * - libs/contracts is the shared vocabulary: no Nest, Redis, Postgres, HTTP or LLM client.
 * - Decision code (pure scoring, state machines, splitting, normalising, prompt building) never imports an
 *   adapter (`*.consumer|processor|projector|repository|controller|gateway|client.ts`) or an I/O package.
 *   A file is decision code when it sits in a `decisions/` folder or is named `*.policy.ts`, `*.machine.ts`,
 *   `*.rules.ts`, `*.splitter.ts`, `*.normaliser.ts` or `*.prompt.ts`.
 * - Apps never import each other; libs never import apps.
 * - Production code (apps and libs outside tests) never imports test code: the doubles in libs/testing
 *   (FakeOneBot, the captured NapCat events, the LLM double) or spec files, nor a devDependency.
 */
const IO_PACKAGES = '^(@nestjs|ioredis|bullmq|typeorm|pg|openai|ws|undici|express|prom-client)($|/)';
const ADAPTERS = '\\.(consumer|processor|projector|repository|controller|gateway|client)\\.ts$';
const TEST_CODE = ['\\.(spec|medium-spec|e2e-spec|fixture)\\.ts$', '^libs/testing/', '^apps/[^/]+/test/', '^test/'];
const DECISION_CODE = '(/decisions/[^/]+\\.ts$|\\.(policy|machine|rules|splitter|normaliser|prompt)\\.ts$)';

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'contracts-are-pure',
      comment: 'libs/contracts imports nothing from Nest, Redis, Postgres, HTTP or LLM clients, nor other libs.',
      severity: 'error',
      from: { path: '^libs/contracts/' },
      to: { pathNot: '^libs/contracts/|^node_modules/(class-validator|class-transformer|uuid|reflect-metadata)/' },
    },
    {
      name: 'decision-code-imports-no-adapter',
      severity: 'error',
      from: { path: DECISION_CODE, pathNot: '\\.spec\\.ts$' },
      to: { path: [ADAPTERS, `^node_modules/${IO_PACKAGES.slice(1)}`] },
    },
    {
      name: 'apps-are-independent',
      severity: 'error',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/([^/]+)/', pathNot: '^apps/$1/' },
    },
    {
      name: 'not-to-test',
      comment: 'Test doubles live in libs/testing so production code cannot import them (STYLE.md).',
      severity: 'error',
      from: { path: '^(apps|libs)/', pathNot: TEST_CODE },
      to: { path: TEST_CODE },
    },
    {
      name: 'not-to-dev-dep',
      comment: 'Production code runs without devDependencies installed (the Docker image prunes them).',
      severity: 'error',
      from: { path: '^(apps|libs)/', pathNot: TEST_CODE },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'], pathNot: '^node_modules/@types/' },
    },
    {
      name: 'libs-never-import-apps',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^apps/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^dist/|\\.d\\.ts$)' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js', '.mjs', '.json'],
    },
  },
};
