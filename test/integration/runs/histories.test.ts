import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { eventually } from '../../support/services';
import { IMAGE, client, config, newTenant, startHarness } from './support';
import { createTemporalClient } from '../../../platform/temporal';
import { replayFailures } from '../../support/replay';

/**
 * Recorded histories of the run workflow (normal, paused/resumed, timed out, killed, waited for a
 * slot) replay against today's workflow code, one set per shape still live: executions of every
 * such shape may still be open (or be reset) when new code is deployed. The live shapes and the
 * patches behind them are listed at the top of workflows/runs/run.ts. After an intended change of
 * shape, add its suffix to SHAPES and record it with
 * `RECORD_RUN_HISTORIES=1 npx jest test/integration/runs/histories.test.ts`; when a patch is
 * removed, drop the shapes that carry it (their files too).
 */
const DIR = path.resolve(__dirname, '../../histories/runs');
const CASES = [
  'run-exited',
  'run-paused-resumed',
  'run-timed-out',
  'run-killed',
  'run-waited-for-slot',
] as const;
/** File suffix of each live shape, oldest first; the last is what record() writes. */
const SHAPES = [
  '.fast', // patched('run-fast-path'): runs started before the three older patches were deprecated
  '.deprecated', // deprecatePatch of run-fast-path, run-activities-merged, slot-freed-signal
  '.one-activity', // patched('run-one-activity'): from the claim to the container's end in one activity
] as const;
const CURRENT_SHAPE = SHAPES[SHAPES.length - 1];

async function record(): Promise<void> {
  const h = await startHarness();
  const temporal = createTemporalClient(config);
  try {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    // A tenant with one slot: its second run waits for the first to give the slot back.
    const oneSlot = client(h.service.url, (await newTenant(h.pool)).key);
    await oneSlot.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 1 });
    await oneSlot.submit({ image: IMAGE, command: ['sleep', '1'] });
    const submit = async (command: string[], timeout = 60) =>
      (await api.submit({ image: IMAGE, command, timeout_seconds: timeout })).body.track_id;
    const runs: Record<(typeof CASES)[number], string> = {
      'run-exited': await submit(['sh', '-c', 'echo hello']),
      'run-paused-resumed': await submit([
        'sh',
        '-c',
        'for i in 1 2 3 4 5 6; do echo $i; sleep 0.5; done',
      ]),
      'run-timed-out': await submit(['sleep', '60'], 1),
      'run-killed': await submit(['sleep', '60']),
      'run-waited-for-slot': (await oneSlot.submit({ image: IMAGE, command: ['true'] })).body
        .track_id,
    };
    await api.waitFor(runs['run-paused-resumed'], ['running']);
    await api.call('POST', `/api/v1/runs/${runs['run-paused-resumed']}/pause`);
    await api.call('POST', `/api/v1/runs/${runs['run-paused-resumed']}/resume`);
    await api.waitFor(runs['run-killed'], ['running']);
    await api.call('POST', `/api/v1/runs/${runs['run-killed']}/kill`);
    fs.mkdirSync(DIR, { recursive: true });
    for (const name of CASES) {
      const handle = temporal.workflow.getHandle(`run/${runs[name]}`);
      await eventually(
        async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined),
        60_000,
      );
      fs.writeFileSync(
        path.join(DIR, `${name}${CURRENT_SHAPE}.json`),
        historyToJSON(await handle.fetchHistory()),
      );
    }
  } finally {
    await h.close();
    await temporal.connection.close();
  }
}

describe('recorded run workflow histories', () => {
  it('replay without a nondeterminism error against the current workflow code', async () => {
    if (process.env.RECORD_RUN_HISTORIES === '1') await record();
    const histories = SHAPES.flatMap((shape) =>
      CASES.map((name) => ({
        workflowId: `${name}${shape}`,
        history: JSON.parse(
          fs.readFileSync(path.join(DIR, `${name}${shape}.json`), 'utf8'),
        ) as unknown,
      })),
    );
    expect(await replayFailures(histories, config.temporalPayloadKeys)).toEqual([]);
  }, 180_000);

  it('record a run from its claim to its end as one activity and two workflow tasks', async () => {
    const h = await startHarness();
    const temporal = createTemporalClient(config);
    try {
      const api = client(h.service.url, (await newTenant(h.pool)).key);
      const { track_id } = (await api.submit({ image: IMAGE, command: ['true'] })).body;
      await api.waitFor(track_id, ['exited']);
      const handle = temporal.workflow.getHandle(`run/${track_id}`);
      await handle.result();
      const { events } = await handle.fetchHistory();
      const activities = events!.flatMap((e) => {
        const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
        return name ? [name] : [];
      });
      expect(activities).toEqual(['claimLaunchAndFollowRun']);
      expect(events!.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(2);
    } finally {
      await h.close();
      await temporal.connection.close();
    }
  }, 60_000);
});
