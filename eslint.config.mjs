// Lint: typescript-eslint's type-aware rules, and the project's own (lint/localRules.cjs). Formatting is Prettier's (npm run format); import cycles and
// the direction of imports between folders are dependency-cruiser's (.dependency-cruiser.cjs).
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';
import local from './lint/localRules.cjs';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'dist-bench/',
      'coverage/',
      'node_modules/',
      '**/*.js',
      '**/*.cjs',
      '**/*.mjs',
      // Generated from docs/asyncapi.yaml, as a consumer generates it.
      'examples/consumer/src/paymentEvents.ts',
    ],
  },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The data layer's and the console's conventions (lint/localRules.cjs; ARCHITECTURE.md, "The data layer").
    files: ['src/**/*.ts'],
    plugins: { local },
    rules: {
      'local/queries-in-query-modules': 'error',
      'local/typed-sql-names': 'error',
      'local/html-by-tag-only': 'error',
    },
  },
  {
    // Tests read answers as supertest gives them (`res.body` is `any`) and assert on their shape.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      // Harness callbacks are typed to return promises; a synchronous check is still one.
      '@typescript-eslint/require-await': 'off',
    },
  },
  prettier,
);
