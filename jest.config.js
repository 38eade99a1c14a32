/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  // Integration tests share one Postgres server and one broker; each file makes its own database and exchange.
  maxWorkers: 2,
  testTimeout: 30000,
};
