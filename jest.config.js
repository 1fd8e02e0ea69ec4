// Projects: `unit` (pure logic), `replay` (recorded histories), `integration` (needs the local stack up).
// slonik 47 pulls ESM-only p-limit/yocto-queue; ts-jest with allowJs transpiles them to CJS.
const common = {
  preset: 'ts-jest/presets/js-with-ts',
  testEnvironment: 'node',
  transform: {
    '^.+\\.[tj]sx?$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true } }],
  },
  // light-my-request (the MCP endpoints' dispatch) pulls the ESM-only cookie 2.
  transformIgnorePatterns: [
    '/node_modules/(?!(p-limit|yocto-queue|uuid|ulid|light-my-request/node_modules/cookie|cookie)/)',
  ],
};

const integration = {
  ...common,
  testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  setupFiles: ['<rootDir>/test/support/load-stack-env.ts'],
};

// Integration files that run after the others, one at a time. `serial`: the fault tests restart
// Postgres, Redis and Temporal, and fast-mode counts what the shared Redis ledger stream holds.
// `built`: the files that use what scripts/test builds beside the other projects on a fresh
// machine (Helm, SeaweedFS, the cluster's Temporal server, Docker Compose and the images the
// Dockerfile and Compose name), and the Compose stack, whose worker shares this host's Docker
// engine; scripts/test runs them last, once those builds are done, and `serial` while they finish.
// Every other integration file runs beside another (two jest workers).
const SERIAL = ['/test/integration/faults/', '/test/integration/quota/fast-mode.test.ts'];
const BUILT = [
  '/test/integration/platform/helm-chart.test.ts',
  '/test/integration/runs/log-objects.test.ts',
  '/test/integration/platform/cluster.test.ts',
  '/test/integration/platform/image.test.ts',
  '/test/integration/platform/compose.test.ts',
];
const matching = (paths) =>
  paths.map((p) => `<rootDir>${p.endsWith('/') ? `${p}**/*.test.ts` : p}`);

module.exports = {
  // A hook that boots a service (its pool, Redis, a Temporal client, its bootstrap) took over
  // 5 s once on the 2-core machine while a bench ran beside the suite: 30 s is the default here.
  testTimeout: 30_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    // Recorded histories replayed against today's workflow code; needs no stack.
    { ...common, displayName: 'replay', testMatch: ['<rootDir>/test/replay/**/*.test.ts'] },
    {
      ...integration,
      displayName: 'integration',
      testPathIgnorePatterns: [...SERIAL, ...BUILT],
    },
    // Run alone (scripts/test runs these projects after the others, one file at a time).
    { ...integration, displayName: 'serial', testMatch: matching(SERIAL) },
    { ...integration, displayName: 'built', testMatch: matching(BUILT) },
  ],
};
