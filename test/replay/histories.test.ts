import fs from 'node:fs';
import path from 'node:path';
import { ENCRYPTED_ENCODING } from '../../platform/payload-codec';
import { testPayloadKeys } from '../support/payload-keys';
import { replayFailures } from '../support/replay';
import * as workflows from '../../workflows';

/**
 * Every recorded history under test/histories/ (saved with
 * `temporal workflow show --workflow-id <id> --output json > file.json`) must replay cleanly
 * against today's workflow code. This is what keeps `temporal workflow reset` and replay safe
 * for operators: a change of workflow shape without `patched()` fails here. Replayed through the
 * payload codec under the tests' keys, as a worker would: histories recorded since payloads are
 * encrypted decode, and those recorded before (in clear) still replay.
 */
const HISTORIES_DIR = path.resolve(__dirname, '..', 'histories');

function historyFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return historyFiles(full);
    return entry.name.endsWith('.json') ? [full] : [];
  });
}

/** The workflow type a history file records (its first event starts the execution). */
function workflowTypeOf(file: string): string | undefined {
  const history = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    events: { workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }[];
  };
  return history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
}

/** The patch markers a history records, in order: `<id>`, or `<id> (deprecated)`. */
function patchMarkers(file: string): string[] {
  const history = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    events: {
      markerRecordedEventAttributes?: {
        markerName?: string;
        details?: Record<string, { payloads?: { data?: string }[] }>;
      };
    }[];
  };
  return history.events.flatMap(({ markerRecordedEventAttributes: marker }) => {
    if (marker?.markerName !== 'core_patch') return [];
    const data = marker.details?.['patch-data']?.payloads?.[0]?.data ?? '';
    const patch = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as {
      id: string;
      deprecated: boolean;
    };
    return [patch.deprecated ? `${patch.id} (deprecated)` : patch.id];
  });
}

/**
 * One recorded history per live shape of the run workflow and the patch markers that make it
 * that shape (the note at the top of workflows/runs/run.ts lists the same).
 */
const NEW_RUN = ['run-fast-path (deprecated)', 'run-one-activity'];
const BEFORE_ONE_ACTIVITY = ['run-fast-path (deprecated)'];
const STARTED_BEFORE_DEPRECATION = ['run-fast-path'];
const RUN_CASES = [
  'run-exited',
  'run-paused-resumed',
  'run-timed-out',
  'run-killed',
  'run-waited-for-slot',
];
const RESETS = [
  'run-reset-FirstWorkflowTask-exited',
  'run-reset-FirstWorkflowTask-failed',
  'run-reset-LastWorkflowTask-failed',
];
const shape = (names: string[], suffix: string, markers: string[]): [string, string[]][] =>
  names.map((name) => [`runs/${name}${suffix}.json`, markers]);
const LIVE_RUN_SHAPES: Record<string, string[]> = Object.fromEntries([
  ...shape(RUN_CASES, '.one-activity', NEW_RUN),
  // A reset run follows its row: ended, it ends so before its launch; active, it launches again.
  ...shape(['run-reset-FirstWorkflowTask-exited'], '.one-activity', [
    ...BEFORE_ONE_ACTIVITY,
    'run-follows-row',
  ]),
  ...shape(['run-reset-FirstWorkflowTask-failed'], '.one-activity', [
    ...BEFORE_ONE_ACTIVITY,
    'run-follows-row',
    'run-one-activity',
  ]),
  ...shape(['run-reset-LastWorkflowTask-failed'], '.one-activity', [...NEW_RUN, 'run-follows-row']),
  ...shape(RUN_CASES, '.deprecated', BEFORE_ONE_ACTIVITY),
  ...shape(RESETS, '.deprecated', [...BEFORE_ONE_ACTIVITY, 'run-follows-row']),
  ...shape(RUN_CASES, '.fast', STARTED_BEFORE_DEPRECATION),
  ...shape(RESETS, '.fast', [...STARTED_BEFORE_DEPRECATION, 'run-follows-row']),
  // run-follows-row's old branch: a reset found the row ended and ended failed, not as its row.
  ...shape(
    ['run-reset-FirstWorkflowTask-exited'],
    '.before-follows-row',
    STARTED_BEFORE_DEPRECATION,
  ),
]);

describe('recorded workflow histories', () => {
  const files = historyFiles(HISTORIES_DIR);

  it('include at least the platform self-check cases', () => {
    const names = files.map((f) => path.relative(HISTORIES_DIR, f));
    expect(names).toEqual(
      expect.arrayContaining([
        'platform/self-check-succeeded.json',
        'platform/self-check-timed-out.json',
      ]),
    );
  });

  it('include a run workflow history of each live shape, with its patch markers', () => {
    const markers = Object.fromEntries(
      Object.keys(LIVE_RUN_SHAPES).map((name) => [
        name,
        fs.existsSync(path.join(HISTORIES_DIR, name))
          ? patchMarkers(path.join(HISTORIES_DIR, name))
          : 'missing',
      ]),
    );
    expect(markers).toEqual(LIVE_RUN_SHAPES);
  });

  it('include histories recorded with encrypted payloads and histories recorded before', () => {
    const encrypted = (file: string) =>
      fs.readFileSync(file, 'utf8').includes(Buffer.from(ENCRYPTED_ENCODING).toString('base64'));
    expect(files.filter(encrypted).map((f) => path.relative(HISTORIES_DIR, f))).toEqual(
      expect.arrayContaining(['runs/run-exited.one-activity.json']),
    );
    expect(files.filter((f) => !encrypted(f)).length).toBeGreaterThan(0);
  });

  it('cover every workflow type the bundle exports (a new type comes with a recorded history)', () => {
    const recorded = new Set(files.map(workflowTypeOf));
    const missing = Object.entries(workflows)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .filter((name) => !recorded.has(name));
    expect(missing).toEqual([]);
  });

  it('replay without a nondeterminism error against the current workflow code', async () => {
    const histories = files.map((file) => ({
      workflowId: path.relative(HISTORIES_DIR, file),
      history: JSON.parse(fs.readFileSync(file, 'utf8')) as unknown,
    }));
    expect(await replayFailures(histories, testPayloadKeys())).toEqual([]);
  }, 120_000);
});
