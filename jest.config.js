/**
 * The test tiers, one jest project each (`jest --selectProjects <name>`; package.json's scripts):
 * - unit: the pure modules; nothing but Node (`npm run test:unit`).
 * - integration: the service, the command line, the contracts, the docs and the chart, against Postgres and RabbitMQ
 *   (`npm test` runs unit and integration, after lint and the type check).
 * - tools: what needs a program beyond Node, Postgres and RabbitMQ: nginx, promtool, prometheus, chromium
 *   (`npm run test:tools`; test/toolsSetup.ts fails at once, naming what to install, when one is missing), and
 *   what takes too long for the unit tier: test/tools/ (the type checker run once for each column of the schema;
 *   beside it, the names of src/ and ARCHITECTURE.md's map of them, issue 57).
 * - faults: the reliability scenarios, and the failover's pair of clusters, one after another (`npm run test:faults`).
 * - image: the image built from the Dockerfile with buildah, run the way the chart runs it (`npm run test:image`;
 *   test/image/imageSetup.ts builds it first, or fails at once naming what to install).
 */
const TOOL_TESTS = [
  '<rootDir>/test/helm/ingressProxy.test.ts', // nginx
  '<rootDir>/test/helm/alerts.test.ts', // promtool
  '<rootDir>/test/helm/liveDashboard.test.ts', // prometheus
];
/** The console in a real browser (chromium); outside the integration tier's folders. */
const BROWSER_TESTS = ['<rootDir>/test/browser/**/*.test.ts'];
/** The type checker run once for each column of the schema: tens of seconds, too long for the unit tier. */
const TYPE_CHECKER_TESTS = ['<rootDir>/test/tools/**/*.test.ts'];

/** @type {import('jest').Config} */
const shared = {
  testEnvironment: 'node',
  // Transpile only: the tiers type-check the whole project with tsc first.
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/{integration,cli,contracts,docs,helm}/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...TOOL_TESTS],
      // Builds dist/ once before the workers start (the CLI, chart and relay tests run the built app), and
      // migrates the database the services of the tests start on copies of (dropped at the end).
      globalSetup: '<rootDir>/test/globalSetup.ts',
      globalTeardown: '<rootDir>/test/globalTeardown.ts',
    },
    {
      ...shared,
      displayName: 'tools',
      testMatch: [...TOOL_TESTS, ...BROWSER_TESTS, ...TYPE_CHECKER_TESTS],
      globalSetup: '<rootDir>/test/toolsSetup.ts',
    },
    {
      ...shared,
      displayName: 'faults',
      testMatch: ['<rootDir>/test/reliability/**/*.test.ts'],
    },
    {
      ...shared,
      displayName: 'image',
      testMatch: ['<rootDir>/test/image/**/*.test.ts'],
      globalSetup: '<rootDir>/test/image/imageSetup.ts',
    },
  ],
  // Integration tests share one Postgres server and one broker; each file makes its own database and exchange.
  maxWorkers: 2,
  testTimeout: 30000,
};
