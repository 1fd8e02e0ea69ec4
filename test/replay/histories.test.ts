import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/workers';
import * as workflows from '../../workflows';

/**
 * Every recorded history under test/histories/ (saved with
 * `temporal workflow show --workflow-id <id> --output json > file.json`) must replay cleanly
 * against today's workflow code. This is what keeps `temporal workflow reset` and replay safe
 * for operators: a change of workflow shape without `patched()` fails here.
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

  it('cover every workflow type the bundle exports (a new type comes with a recorded history)', () => {
    const recorded = new Set(files.map(workflowTypeOf));
    const missing = Object.entries(workflows)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .filter((name) => !recorded.has(name));
    expect(missing).toEqual([]);
  });

  it('replay without a nondeterminism error against the current workflow code', async () => {
    const workflowBundle = await bundleWorkflows();
    const histories = files.map((file) => ({
      workflowId: path.relative(HISTORIES_DIR, file),
      history: JSON.parse(fs.readFileSync(file, 'utf8')) as unknown,
    }));
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
