/**
 * The test tiers, one jest project each (`jest --selectProjects <name>`; package.json's scripts):
 * - unit: the pure modules; nothing but Node (`npm run test:unit`).
 * - integration: the service, the command line, the contracts and the docs, against Postgres and RabbitMQ
 *   (`npm test` runs unit and integration, after lint and the type check).
 * - tools: what runs programs beyond Node, Postgres and RabbitMQ, each test with the rest of its kind: the chart and
 *   the image's recipe (test/helm/: helm, the manifests' validator, nginx, promtool, prometheus), the console in
 *   chromium (test/browser/), and the type checker run once for each column of the schema (test/tools/, beside the
 *   names of src/ and ARCHITECTURE.md's map of them, issue 57) (`npm run test:tools`; test/toolsSetup.ts fails at
 *   once, naming what to install, when a program is missing).
 * - faults: the reliability scenarios, and the failover's pair of clusters, one after another (`npm run test:faults`).
 * - image: the image built from the Dockerfile with buildah, run the way the chart runs it (`npm run test:image`;
 *   test/image/imageSetup.ts builds it first, or fails at once naming what to install).
 */
const TOOLS_TESTS = ['<rootDir>/test/{helm,browser,tools}/**/*.test.ts'];

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
      testMatch: ['<rootDir>/test/{integration,cli,contracts,docs}/**/*.test.ts'],
      // Builds dist/ once before the workers start (the CLI and relay tests run the built app), and
      // migrates the database the services of the tests start on copies of (dropped at the end).
      globalSetup: '<rootDir>/test/globalSetup.ts',
      globalTeardown: '<rootDir>/test/globalTeardown.ts',
    },
    {
      ...shared,
      displayName: 'tools',
      testMatch: TOOLS_TESTS,
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
