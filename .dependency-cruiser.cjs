// @ts-check
const path = require('node:path');
/**
 * The house's floors, checked through every import (`npm run lint` runs this; README "Layout"):
 *
 *   api/ worker/ cli/     entry points: the HTTP edge, the Temporal workers, the operator CLIs
 *   workflows/            deterministic workflow code, bundled apart for the worker; it knows its
 *                         activities by their types only
 *   activities/           what a workflow asks the world to do
 *   services/<service>/   each service's logic: no Koa, no route, no other service
 *   db/                   data access: Postgres, Redis, migrations, the backends' health
 *   platform/             the ground every process stands on: config, errors, logging, clients
 *                         of Temporal, Docker and the quota API, webhook rules
 *   contracts/            what the floors above agree on: workflow ids, inputs, signals and
 *                         updates, search attributes, task queues, summaries, run and DAG rules;
 *                         pure, so the workflow bundle loads it too
 *
 * Arrows point down only. Rules with `reachable` follow imports transitively, so a module that
 * reaches Koa through three others is caught as surely as one that imports it.
 */

const KOA = '(^|/)node_modules/(koa|@koa/|koa-)';
/** Every floor below the HTTP edge (the worker and the CLIs are entry points, but not HTTP). */
const BELOW_THE_EDGE = '^(services|activities|workflows|worker|cli|db|platform|contracts)/';
/** What the workflow sandbox may load at run time besides workflow code and contracts. */
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
        'Service logic is called by the edge, the activities and the CLIs; it calls none of them, and starts a workflow by its contract, never its body.',
      severity: 'error',
      from: { path: '^services/' },
      to: { path: '^(activities|workflows|worker|cli)/' },
    },
    {
      name: 'one-service-per-floor',
      comment:
        "A service's logic uses no other service's: what two services share goes down to platform/ or contracts/.",
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'data-below-services',
      comment: 'db/ imports no service, activity, workflow or entry point.',
      severity: 'error',
      from: { path: '^db/' },
      to: { path: '^(services|activities|workflows|worker|cli)/' },
    },
    {
      name: 'platform-is-the-ground',
      comment:
        'platform/ imports nothing of the house but platform/: every floor stands on it, the data floor too.',
      severity: 'error',
      from: { path: '^platform/' },
      to: { path: '^(db|contracts|services|activities|workflows|worker|cli)/' },
    },
    {
      name: 'contracts-are-the-floor',
      comment:
        'Contracts import nothing of the house but contracts, and only the SDK parts the workflow sandbox loads: every floor, the workflow bundle too, can take them.',
      severity: 'error',
      from: { path: '^contracts/' },
      to: { pathNot: ['^contracts/', WORKFLOW_RUNTIME] },
    },
    {
      name: 'workflow-bodies-only-in-the-bundle',
      comment:
        "A workflow body is loaded only by the worker's workflow bundle (worker/ names it by path): what others need of a workflow (its id, input, signals, summary) is its contract in contracts/.",
      severity: 'error',
      from: { pathNot: '^workflows/' },
      to: { path: '^workflows/' },
    },
    {
      name: 'workflows-are-deterministic',
      comment:
        "Workflow code runs in Temporal's sandbox: it loads only workflow code, contracts and the SDK's workflow side.",
      severity: 'error',
      from: { path: '^workflows/' },
      to: {
        pathNot: ['^workflows/', '^contracts/', WORKFLOW_RUNTIME],
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'workflows-know-activities-by-type',
      comment:
        'What a workflow needs of the floors below is the signatures of its activities (import type from activities/), nothing of a service, the data floor or the edge.',
      severity: 'error',
      from: { path: '^workflows/' },
      to: {
        path: '^(services|db|platform|api|worker|cli)/',
        dependencyTypes: ['type-only'],
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
