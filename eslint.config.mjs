// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/**
 * The HTTP edge: Koa, the shared edge under api/platform (http, mcp, the codec endpoint, the
 * server), and each service's routes, operations, app, envelope, OpenAPI document and MCP tools.
 */
const THE_HTTP_EDGE = {
  group: [
    'koa',
    'koa-*',
    '@koa/*',
    '**/api/platform/**',
    '**/api/*/routes*',
    '**/api/*/operations*',
    '**/api/*/app*',
    '**/api/*/envelope*',
    '**/api/*/openapi*',
    '**/api/*/mcp*',
  ],
  message:
    "below the HTTP edge: return or throw domain outcomes; shared ground goes in platform/, a service's plain modules in api/<service>/",
};

/** The services: what data access and the platform's ground floor may never import. */
const THE_SERVICES = {
  group: ['**/api/**'],
  message: 'db/ and platform/ are below the services: move what they need down or pass it in',
};
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
    // Activities and the worker sit below the HTTP edge; they may call a service's plain modules
    // (api/<service>/) and the platform's ground floor (platform/).
    files: ['activities/**/*.ts', 'worker/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [THE_HTTP_EDGE] }] },
  },
  {
    // Data access and the platform's ground floor import nothing of the services.
    files: ['db/**/*.ts', 'platform/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [THE_HTTP_EDGE, THE_SERVICES] }] },
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
              group: ['slonik', 'pg', 'ioredis', 'dockerode', '../../db/*', '../db/*'],
              message: 'workflow code must not do I/O; call an activity',
            },
            THE_HTTP_EDGE,
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
