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
/**
 * Workflow bodies (files importing '@temporalio/workflow'): only the worker's workflow bundle
 * loads them (worker/ names the bundle by `workflowsPath: require.resolve('../workflows')`, not
 * an import). What a service, an activity or data access shares with a workflow lives in a pure
 * sibling, the only paths under workflows/ they may import (relative to workflows/).
 */
const SHARED_WITH_WORKFLOWS = [
  '[^/]+/[^/]*definitions', // <area>/<workflow>-definitions.ts: ids, inputs, updates
  '[^/]+/summaries', // <area>/summaries.ts: the Web UI's summaries of a start
  'runs/dag-rules',
  'platform/search-attributes',
  'platform/task-queues',
];
/**
 * Anything under workflows/ (the bundle's index.ts too) but those. A regex: a gitignore group's
 * `!` cannot re-include a file once its folder is excluded. Not db/runs/workflows.ts
 * ('./workflows'). An `import type` of a workflow function for a typed start is erased, so it
 * loads nothing and stays allowed.
 */
const WORKFLOW_BODIES = {
  regex: `^(\\.\\./)+workflows(?!/(${SHARED_WITH_WORKFLOWS.join('|')})$)(/.*)?$`,
  caseSensitive: true,
  allowTypeImports: true,
  message:
    "a workflow body is loaded only by the worker's workflow bundle: import what you share with it from its pure <workflow>-definitions.ts",
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
    // Workflow bodies are the worker's bundle alone (a separate rule, so it adds to, never
    // replaces, each folder's no-restricted-imports below).
    files: [
      'api/**/*.ts',
      'activities/**/*.ts',
      'db/**/*.ts',
      'worker/**/*.ts',
      'platform/**/*.ts',
    ],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [WORKFLOW_BODIES] }],
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
