// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/** Imports of HTTP code that db/ and activities/ may not make. */
const BELOW_THE_EDGE = {
  group: [
    'koa',
    'koa-*',
    '@koa/*',
    '**/api/platform/http',
    '**/api/platform/http/**',
    '**/api/*/routes*',
    '**/api/*/app*',
    '**/api/*/envelope*',
    '**/api/*/openapi*',
  ],
  message: 'db/ and activities/ sit below the HTTP edge: return or throw domain outcomes',
};

/**
 * What db/ may import from api/: the domain errors it throws (api/platform/errors has no HTTP in
 * it). Services call data access, never the reverse.
 */
const ABOVE_THE_DATA = (...allowed) => ({
  group: [
    '**/api/*/**',
    '!**/api/platform/errors',
    ...allowed.map((module) => `!**/api/platform/${module}`),
  ],
  message: 'db/ is below the services: move what it needs down (db/<service>/) or pass it in',
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', 'jest.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false } },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
    },
  },
  {
    // Data access and activities sit below the HTTP edge: no Koa, no routes, apps, envelopes or
    // OpenAPI documents. Activities may call service logic (api/<service>/ plain modules) and
    // api/platform's errors, config, logger, docker and temporal modules, none of which is HTTP.
    files: ['activities/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [BELOW_THE_EDGE] }] },
  },
  {
    // ...and data access imports nothing of the services but the domain errors it throws.
    files: ['db/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [BELOW_THE_EDGE, ABOVE_THE_DATA()] }],
    },
  },
  {
    // The migration command is a process entry point: it reads the configuration and logs.
    files: ['db/migrate.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [BELOW_THE_EDGE, ABOVE_THE_DATA('config', 'logger')] },
      ],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no I/O, no Node built-ins.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                'node:*',
                'fs',
                'path',
                'crypto',
                'http',
                'https',
                'net',
                'child_process',
                'os',
              ],
              message: 'workflow code must not use Node built-ins',
            },
            {
              group: [
                'slonik',
                'pg',
                'ioredis',
                'dockerode',
                'koa',
                '@koa/*',
                '../../db/*',
                '../db/*',
                '../../api/*/routes*',
              ],
              message: 'workflow code must not do I/O; call an activity',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
);
