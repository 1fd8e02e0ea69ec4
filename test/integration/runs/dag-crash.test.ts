import { WORKER_READY_TIMEOUT_MS, ownWorker } from './own-worker';
import { containersCreated, newTenant, type Harness } from './support';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, edge, shNode } from './dag-support';

describe('a worker killed while a DAG has nodes running', () => {
  const own = ownWorker('dagcrash');
  let h: Harness;
  beforeAll(async () => {
    h = await own.start();
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(() => own.stop());

  it('ends with the right states, its outputs, and one container per attempt', async () => {
    const { key } = await newTenant(h.pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    const dag = dagClient(h.service.url, key);
    const sinceSeconds = Math.floor(Date.now() / 1000) - 1;
    const branch = (ref: string, exit: number) =>
      shNode(
        ref,
        `for i in $(seq 1 12); do echo "$i"; sleep 0.5; done; echo '"${ref}"'; exit ${exit}`,
      );
    const workflowId = await dag.submit({
      failure_policy: 'continue',
      nodes: [
        branch('left', 0),
        branch('middle', 0),
        branch('right', 4),
        shNode('join', 'echo "[$SVC_INPUT_LEFT, $SVC_INPUT_MIDDLE]"', {
          inputs_from: ['left', 'middle'],
        }),
        shNode('on_right_failed', 'true'),
      ],
      edges: [
        edge('left', 'join'),
        edge('middle', 'join'),
        edge('right', 'on_right_failed', 'on_failure'),
      ],
    });
    for (const ref of ['left', 'middle', 'right']) {
      const node = await dag.waitForNode(workflowId, ref, ['running'], 120_000);
      await dag.api.waitFor(node.current_track_id!, ['running'], 120_000);
    }

    await own.restart();

    const done = await dag.waitForState(workflowId, undefined, 180_000);
    expect(done.state).toBe('failed');
    expect(await dag.states(workflowId)).toEqual({
      left: 'succeeded',
      middle: 'succeeded',
      right: 'failed',
      join: 'succeeded',
      on_right_failed: 'succeeded',
    });
    expect((await dag.node(workflowId, 'join')).output).toEqual(['left', 'middle']);
    for (const ref of ['left', 'middle', 'right', 'join', 'on_right_failed']) {
      const node = await dag.node(workflowId, ref);
      expect(node.attempts).toHaveLength(1);
      expect(await containersCreated(node.attempts[0]!, sinceSeconds)).toBe(1);
    }
    const events = await dag.events(workflowId);
    // Every change recorded once, in order, across the restart.
    const byNode = (ref: string) => events.filter((e) => e.node_ref === ref).map((e) => e.to_state);
    expect(byNode('left')).toEqual(['running', 'succeeded']);
    expect(byNode('right')).toEqual(['running', 'failed']);
  }, 400_000);
});
