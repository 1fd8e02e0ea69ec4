import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The layering rules of .dependency-cruiser.cjs, which `npm run lint` applies to the real tree
 * (the folders `npm run lint:layers` names): cruised here over a small house with one planted violation of each
 * rule (test/fixtures/layering), they catch exactly those, transitive ones included, and let
 * pass what the rules allow (a contract taken by a service and a workflow, a workflow's
 * `import type` of its activities).
 */
const ROOT = path.resolve(__dirname, '../../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/layering');
const DEPCRUISE = path.join(ROOT, 'node_modules/.bin/depcruise');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

async function violationsIn(dir: string, folders: string[]): Promise<string[]> {
  const args = ['--config', path.join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'];
  // depcruise exits non-zero when it finds violations; its JSON report is on stdout all the same.
  const run = await promisify(execFile)(DEPCRUISE, [...args, ...folders], {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  const report = JSON.parse(run.stdout) as { summary: { violations: Violation[] } };
  const named = (to: string) => to.replace(/^.*node_modules\/koa\/.*$/, 'koa');
  return report.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${named(v.to)}`).sort();
}

describe('layering rules (.dependency-cruiser.cjs)', () => {
  it('catch each planted violation of the fixture house, and nothing else', async () => {
    const found = await violationsIn(FIXTURE, [
      'api',
      'services',
      'activities',
      'workflows',
      'worker',
      'db',
      'platform',
      'contracts',
    ]);
    expect(found).toEqual(
      [
        'api-is-the-top: services/ledger/uses-a-route.ts -> api/route.ts',
        'data-below-services: db/reads-a-service.ts -> services/runs/rule.ts',
        'platform-is-the-ground: platform/uses-data.ts -> db/clean-read.ts',
        'one-service-per-floor: services/ledger/uses-another-service.ts -> services/runs/rule.ts',
        'services-below-activities: services/runs/calls-an-activity.ts -> activities/step.ts',
        'workflow-bodies-only-in-the-bundle: worker/loads-a-body.ts -> workflows/runs/body.ts',
        'workflows-are-deterministic: workflows/runs/body.ts -> fs',
        'workflows-know-activities-by-type: workflows/runs/body.ts -> db/clean-read.ts',
        'contracts-are-the-floor: contracts/runs/uses-data.ts -> db/clean-read.ts',
        // A typed start of a workflow body is a start by its contract now: both rules see it.
        'services-below-activities: services/runs/types-a-body.ts -> workflows/runs/body.ts',
        'workflow-bodies-only-in-the-bundle: services/runs/types-a-body.ts -> workflows/runs/body.ts',
        // Transitive: an activity reaches Koa through a service and a route, two imports away.
        'no-koa-below-the-edge: activities/step.ts -> api/route.ts',
        'no-koa-below-the-edge: activities/step.ts -> koa',
        'no-koa-below-the-edge: services/ledger/uses-a-route.ts -> api/route.ts',
        'no-koa-below-the-edge: services/ledger/uses-a-route.ts -> koa',
        'no-koa-below-the-edge: services/runs/calls-an-activity.ts -> api/route.ts',
        'no-koa-below-the-edge: services/runs/calls-an-activity.ts -> koa',
      ].sort(),
    );
  }, 60_000);
});
