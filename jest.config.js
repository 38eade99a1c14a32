/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Transpile only: `npm test` type-checks the whole project with tsc first.
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  // Integration tests share one Postgres server and one broker; each file makes its own database and exchange.
  maxWorkers: 2,
  // Builds dist/ once before the workers start (the CLI, chart and relay tests run the built app).
  globalSetup: '<rootDir>/test/globalSetup.ts',
  testTimeout: 30000,
};
