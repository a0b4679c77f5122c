/**
 * Three tiers (STYLE.md): unit `*.spec.ts` beside the code, medium `*.medium-spec.ts` on real Redis + Postgres,
 * e2e `test/e2e/*.e2e-spec.ts` with the apps as separate processes, observability `test/observability/*.prom-spec.ts`
 * (the apps scraped by a real Prometheus). Nest 12 is pure ESM, so Jest runs in its
 * native ESM mode (`--experimental-vm-modules`, set by the npm scripts).
 */
const tsJest = [
  'ts-jest',
  { useESM: true, tsconfig: '<rootDir>/tsconfig.json', diagnostics: { ignoreCodes: ['TS151001'] } },
];

const common = {
  rootDir: '.',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': tsJest },
  moduleNameMapper: {
    '^@app/([a-z-]+)$': '<rootDir>/libs/$1/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  setupFiles: ['reflect-metadata'],
};

export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs,tools}/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'medium',
      testMatch: ['<rootDir>/{apps,libs,tools,test}/**/*.medium-spec.ts'],
      globalSetup: '<rootDir>/test/setup/medium-global-setup.ts',
    },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'],
    },
    {
      ...common,
      displayName: 'observability',
      testMatch: ['<rootDir>/test/observability/**/*.prom-spec.ts'],
    },
    {
      ...common,
      displayName: 'chaos',
      testMatch: ['<rootDir>/test/chaos/**/*.chaos-spec.ts'],
    },
    {
      ...common,
      // The bus's medium specs, the simulator's stream watch and the walking skeleton again, on a local 3-master
      // Redis Cluster made for the run (docs/redis-cluster.md): proves every key family keeps its hash tag (no
      // CROSSSLOT).
      displayName: 'cluster',
      testMatch: [
        '<rootDir>/libs/event-bus/src/**/*.medium-spec.ts',
        '<rootDir>/tools/simulator/stack-watch.medium-spec.ts',
        '<rootDir>/test/e2e/walking-skeleton.e2e-spec.ts',
      ],
      globalSetup: '<rootDir>/test/setup/cluster-global-setup.mjs',
      globalTeardown: '<rootDir>/test/setup/cluster-global-teardown.mjs',
    },
  ],
};
