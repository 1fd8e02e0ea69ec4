// @ts-check
const path = require('node:path');
/**
 * The house's floors, checked through every import (`npm run lint` runs this; README "Layout"):
 *
 *   api/ worker/ cli/     entry points: the HTTP edge, the Temporal workers, the operator CLIs
 *   activities/           what a workflow asks the world to do
 *   services/<service>/   each service's logic: no Koa, no route, no other service
 *   workflows/            deterministic workflow code, bundled apart for the worker
 *   db/ platform/         the ground floor: data access and what every process shares
 *
 * Arrows point down only. Rules with `reachable` follow imports transitively, so a module that
 * reaches Koa through three others is caught as surely as one that imports it.
 */

/** Workflow files a service, an activity or data access may load: pure, no workflow body. */
const SHARED_WITH_WORKFLOWS = [
  '[^/]+/[^/]*definitions\\.ts', // <area>/<workflow>-definitions.ts: ids, inputs, updates
  '[^/]+/summaries\\.ts', // <area>/summaries.ts: the Web UI's summaries of a start
  'runs/dag-rules\\.ts',
  'shared/search-attributes\\.ts',
  'shared/task-queues\\.ts',
];
const KOA = '(^|/)node_modules/(koa|@koa/|koa-)';
/** Every floor below the HTTP edge (the worker and the CLIs are entry points, but not HTTP). */
const BELOW_THE_EDGE = '^(services|activities|workflows|worker|cli|db|platform)/';
/** What the workflow sandbox may load at run time besides workflow code. */
const WORKFLOW_RUNTIME = '(^|/)node_modules/(@temporalio/(workflow|common)|ms|long)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'api-is-the-top',
      comment: 'Nothing below the HTTP edge imports it: api/ is imported only from api/ itself.',
      severity: 'error',
      from: { path: BELOW_THE_EDGE },
      to: { path: '^api/' },
    },
    {
      name: 'no-koa-below-the-edge',
      comment:
        'Activities, the worker, the CLIs, the services and the ground floor never reach Koa or a route, not even through another module.',
      severity: 'error',
      from: { path: BELOW_THE_EDGE },
      to: { path: [KOA, '^api/'], reachable: true },
    },
    {
      name: 'services-below-activities',
      comment:
        'Service logic is called by the edge, the activities and the CLIs; it calls none of them.',
      severity: 'error',
      from: { path: '^services/' },
      to: { path: '^(activities|worker|cli)/' },
    },
    {
      name: 'one-service-per-floor',
      comment:
        "A service's logic uses no other service's: what two services share goes down to platform/.",
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'ground-floor',
      comment: 'db/ and platform/ import no service, activity or entry point.',
      severity: 'error',
      from: { path: '^(db|platform)/' },
      to: { path: '^(services|activities|worker|cli)/' },
    },
    {
      name: 'workflow-bodies-only-in-the-bundle',
      comment:
        "A workflow body is loaded only by the worker's workflow bundle (worker/ names it by path): share ids, inputs and summaries through its pure <workflow>-definitions.ts. An import type of a workflow for a typed start loads nothing.",
      severity: 'error',
      from: { pathNot: '^workflows/' },
      to: {
        path: '^workflows/',
        pathNot: `^workflows/(${SHARED_WITH_WORKFLOWS.join('|')})$`,
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'workflows-are-deterministic',
      comment:
        "Workflow code runs in Temporal's sandbox: it loads only workflow code and the SDK's workflow side; what it needs of activities is their types.",
      severity: 'error',
      from: { path: '^workflows/' },
      to: {
        pathNot: [`^workflows/`, WORKFLOW_RUNTIME],
        dependencyTypesNot: ['type-only'],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: path.join(__dirname, 'tsconfig.json') },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.json'],
    },
  },
};
