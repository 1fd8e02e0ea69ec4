import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createTemporalClient } from '../../../platform/temporal';
import { eventually } from '../../support/services';
import { ulid } from 'ulid';
import { runAdmin } from '../../../cli/runs';
import { config, newTenant, quotaRecords, startHarness, type Harness } from './support';
import {
  ALL_WORKFLOW_PERMISSIONS,
  dagClient,
  edge,
  gate,
  shNode,
  type DagClient,
} from './dag-support';
import { INPUTS_MAX_BYTES } from '../../../contracts/runs/dag';

/**
 * The DAG engine against the real stack: every row of the spec's Workflow and Node state
 * tables, with real containers of the local registry. DAGs that need no control are submitted
 * together up front (they run side by side); the others drive their controls in their test.
 * With RECORD_RUN_HISTORIES=1 the executions named in `recorded` are saved under
 * test/histories/runs/ for the replay project.
 */
const HISTORIES = path.resolve(__dirname, '../../histories/runs');
jest.setTimeout(120_000);
/** A graph where fail_fast and continue differ: `slow` succeeds after `broken` has failed. */
const policyGraph = (failurePolicy: string) => ({
  name: `policy-${failurePolicy}`,
  failure_policy: failurePolicy,
  nodes: [
    shNode('broken', 'exit 3'),
    shNode('slow', 'sleep 3'),
    shNode('after_success', 'true'),
    shNode('after_failure', 'true'),
    shNode('after_always', 'true'),
    shNode('forward', 'true'),
    shNode('below_skipped', 'true'),
    shNode('always_of_skipped', 'true'),
  ],
  edges: [
    edge('broken', 'after_success', 'on_success'),
    edge('broken', 'after_failure', 'on_failure'),
    edge('broken', 'after_always', 'always'),
    edge('slow', 'forward', 'on_success'),
    edge('after_success', 'below_skipped', 'on_success'),
    edge('after_success', 'always_of_skipped', 'always'),
  ],
});

/** A JSON string whose injected form (with its quotes) is `bytes` long. */
const printJsonString = (bytes: number) =>
  `printf '"'; head -c ${bytes - 2} /dev/zero | tr '\\0' x; printf '"\\n'`;

describe('DAG workflows on the engine', () => {
  let harness: Harness;
  let dag: DagClient;
  let temporal: Client;
  const passive: Record<string, Promise<string>> = {};
  /** History file name → the execution (workflow id, and run id when not the latest). */
  const recorded: Record<string, { workflowId: string; runId?: string }> = {};

  beforeAll(async () => {
    harness = await startHarness();
    temporal = createTemporalClient(config);
    const { key } = await newTenant(harness.pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    dag = dagClient(harness.service.url, key);
    await dag.api.call('PUT', '/api/v1/tenant/quotas', {
      max_concurrent_workflows: 20,
      max_concurrent_runs: 20,
    });
    passive.failFast = dag.submit(policyGraph('fail_fast'));
    passive.continue = dag.submit(policyGraph('continue'));
    passive.retries = dag.submit({
      nodes: [shNode('flaky', 'echo attempt; exit 1', { retries: 2, retry_backoff_seconds: 1 })],
    });
    passive.messages = dag.submit({
      nodes: [
        shNode('step-1.x', `echo not json; echo '{"x": [1, 2], "s": "é"}'`),
        shNode('reader', 'echo "$SVC_INPUT_STEP_1_X"', { inputs_from: ['step-1.x'] }),
      ],
      edges: [edge('step-1.x', 'reader')],
    });
    passive.inputsLimit = dag.submit({
      failure_policy: 'continue',
      nodes: [
        shNode('at_limit', printJsonString(INPUTS_MAX_BYTES)),
        shNode('past_limit', printJsonString(INPUTS_MAX_BYTES + 1)),
        shNode('takes_at_limit', 'echo "${#SVC_INPUT_AT_LIMIT}"', { inputs_from: ['at_limit'] }),
        shNode('takes_past_limit', 'true', { inputs_from: ['past_limit'] }),
      ],
      edges: [edge('at_limit', 'takes_at_limit'), edge('past_limit', 'takes_past_limit')],
    });
  }, 60_000);

  afterAll(async () => {
    if (process.env.RECORD_RUN_HISTORIES === '1')
      for (const [name, { workflowId, runId }] of Object.entries(recorded)) {
        const handle = temporal.workflow.getHandle(workflowId, runId);
        await eventually(async () =>
          (await handle.describe()).status.name === 'COMPLETED' ? true : undefined,
        );
        const history = await handle.fetchHistory();
        fs.writeFileSync(path.join(HISTORIES, `${name}.json`), historyToJSON(history));
      }
    await temporal.connection.close();
    await harness.close();
  });

  it.each(['failFast', 'continue'] as const)(
    '%s: edges fire by condition, skips propagate, a skipped upstream satisfies not even always',
    async (policy) => {
      const id = await passive[policy]!;
      const done = await dag.waitForState(id);
      expect(done.state).toBe('failed');
      expect(await dag.states(id)).toEqual({
        broken: 'failed',
        slow: 'succeeded',
        after_success: 'skipped',
        after_failure: 'succeeded',
        after_always: 'succeeded',
        // fail_fast: no forward node launches after a failure; continue: unaffected branches run.
        forward: policy === 'failFast' ? 'skipped' : 'succeeded',
        below_skipped: 'skipped',
        always_of_skipped: 'skipped',
      });
      const result = await dag.api.call<{ failed_nodes: string[]; state: string }>(
        'GET',
        `/api/v1/workflows/${id}/result`,
      );
      expect(result.status).toBe(200);
      expect(result.body.failed_nodes).toEqual(['broken']);
      expect(done.nodes.find((n) => n.ref === 'broken')!.exit_code).toBe(3);
      if (policy === 'failFast') recorded['dag-failed-fail-fast'] = { workflowId: `dag/${id}` };
    },
  );

  it('retries a failed node after its fixed backoff, each attempt a fresh run', async () => {
    const id = await passive.retries!;
    await dag.waitForState(id);
    const flaky = await dag.node(id, 'flaky');
    expect(flaky.state).toBe('failed');
    expect(flaky.attempt).toBe(3);
    expect(new Set(flaky.attempts).size).toBe(3);
    expect(flaky.current_track_id).toBe(flaky.attempts[2]);
    const events = (await dag.events(id)).filter((e) => e.node_ref === 'flaky');
    expect(events.map((e) => e.to_state)).toEqual([
      'running',
      'retrying',
      'running',
      'retrying',
      'running',
      'failed',
    ]);
    // Each retry waited retry_backoff_seconds (1 s) in retrying before its run.
    for (const i of [1, 3]) {
      const waited = Date.parse(events[i + 1]!.created_at) - Date.parse(events[i]!.created_at);
      expect(waited).toBeGreaterThanOrEqual(1000);
    }
    // Every attempt is an ordinary run of the workflow's node.
    for (const trackId of flaky.attempts) {
      const run = await dag.api.call<{ state: string; workflow_id: string; node_ref: string }>(
        'GET',
        `/api/v1/runs/${trackId}`,
      );
      expect(run.body).toMatchObject({ state: 'failed', workflow_id: id, node_ref: 'flaky' });
    }
  });

  it('passes the JSON of the last stdout line to a downstream node as SVC_INPUT_<REF>', async () => {
    const id = await passive.messages!;
    expect((await dag.waitForState(id)).state).toBe('succeeded');
    const upstream = await dag.node(id, 'step-1.x');
    expect(upstream.output).toEqual({ x: [1, 2], s: 'é' });
    // The reader printed what it was given: the same JSON, so its output is the same value.
    expect((await dag.node(id, 'reader')).output).toEqual({ x: [1, 2], s: 'é' });
    recorded['dag-succeeded'] = { workflowId: `dag/${id}` };
  });

  it("writes the launches one task decides, and a node's end with the launches it allows, in one local activity", async () => {
    const id = await dag.submit({
      nodes: ['root', 'x', 'y', 'z', 'join'].map((ref) => shNode(ref, 'true')),
      edges: [...['x', 'y', 'z'].flatMap((ref) => [edge('root', ref), edge(ref, 'join')])],
    });
    expect((await dag.waitForState(id)).state).toBe('succeeded');
    const { events } = await temporal.workflow.getHandle(`dag/${id}`).fetchHistory();
    const writes = events!.flatMap((e) => {
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_local_activity') return [];
      const data = marker.details!.data!.payloads![0]!.data!;
      const type = (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type: string })
        .activity_type;
      return type === 'loadDag' || type === 'recordDagChanges' ? [] : [type];
    });
    // Ten writes (five launches, five ends): root's launch; root's end with the three launches
    // it allows; the three ends (the last with join's launch, unless two ended at once); join's end.
    expect(new Set(writes)).toEqual(new Set(['writeNodeAttempts']));
    expect(writes.length).toBeLessThanOrEqual(6);
    const started = events!.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    const taskOf = (e: (typeof started)[number]) =>
      String(e.startChildWorkflowExecutionInitiatedEventAttributes!.workflowTaskCompletedEventId);
    expect(new Set(started.slice(1, 4).map(taskOf)).size).toBe(1);
  });

  it('fails a node whose injected inputs pass 64 KB with output {error: inputs_too_large}', async () => {
    const id = await passive.inputsLimit!;
    expect((await dag.waitForState(id)).state).toBe('failed');
    const atLimit = await dag.node(id, 'takes_at_limit');
    expect(atLimit.state).toBe('succeeded');
    // ${#VAR} counts characters: the injected value is exactly INPUTS_MAX_BYTES long.
    expect(atLimit.output).toBe(INPUTS_MAX_BYTES);
    const past = await dag.node(id, 'takes_past_limit');
    expect(past).toMatchObject({ state: 'failed', output: { error: 'inputs_too_large' } });
    expect(past.attempts).toEqual([]);
  });

  it('approves a gate (succeeded, on_success fires) and rejects one (failed, on_failure fires)', async () => {
    const id = await dag.submit({
      failure_policy: 'continue',
      nodes: [
        gate('yes'),
        gate('no'),
        shNode('after_yes', 'true'),
        shNode('after_no', 'true'),
        shNode('success_of_no', 'true'),
      ],
      edges: [
        edge('yes', 'after_yes'),
        edge('no', 'after_no', 'on_failure'),
        edge('no', 'success_of_no'),
      ],
    });
    await dag.waitForNode(id, 'yes', ['waiting_approval']);
    await dag.waitForNode(id, 'no', ['waiting_approval']);
    // The gate parks: the workflow stays active while it waits.
    expect((await dag.status(id)).state).toBe('running');
    expect((await dag.control(id, 'approve', 'yes')).status).toBe(200);
    expect((await dag.control(id, 'reject', 'no')).status).toBe(200);
    expect((await dag.waitForState(id)).state).toBe('failed');
    expect(await dag.states(id)).toEqual({
      yes: 'succeeded',
      no: 'failed',
      after_yes: 'succeeded',
      after_no: 'succeeded',
      success_of_no: 'skipped',
    });
    recorded['dag-gates-decided'] = { workflowId: `dag/${id}` };
  });

  it('lets exactly one of a racing approve and reject win', async () => {
    const id = await dag.submit({ nodes: [gate('g')] });
    await dag.waitForNode(id, 'g', ['waiting_approval']);
    const replies = await Promise.all([
      dag.control(id, 'approve', 'g'),
      dag.control(id, 'reject', 'g'),
      dag.control(id, 'approve', 'g'),
      dag.control(id, 'reject', 'g'),
    ]);
    const won = replies.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of replies.filter((r) => r.status !== 200))
      expect(lost).toMatchObject({ status: 409, body: { detail: 'not_awaiting_approval' } });
    const final = (await dag.waitForState(id)).nodes[0]!.state;
    expect(final).toBe(won[0] === replies[0] || won[0] === replies[2] ? 'succeeded' : 'failed');
  });

  it('refuses approve on a container node and on a gate not yet waiting', async () => {
    const id = await dag.submit({
      nodes: [shNode('first', 'sleep 2'), gate('later')],
      edges: [edge('first', 'later')],
    });
    await dag.waitForNode(id, 'first', ['running']);
    expect((await dag.control(id, 'approve', 'first')).body.detail).toBe('not_an_approval_node');
    const early = await dag.control(id, 'reject', 'later');
    expect(early).toMatchObject({ status: 409, body: { detail: 'not_awaiting_approval' } });
    await dag.waitForNode(id, 'later', ['waiting_approval']);
    await dag.control(id, 'approve', 'later');
    expect((await dag.waitForState(id)).state).toBe('succeeded');
  });

  it('pauses (no new node launches, the running one finishes) and resumes', async () => {
    const id = await dag.submit({
      nodes: [shNode('first', 'sleep 2'), shNode('second', 'true')],
      edges: [edge('first', 'second')],
    });
    await dag.waitForNode(id, 'first', ['running']);
    expect((await dag.control(id, 'pause')).status).toBe(200);
    expect((await dag.control(id, 'pause')).body.detail).toBe('not_pausable');
    await dag.waitForNode(id, 'first', ['succeeded']);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await dag.status(id)).toMatchObject({ state: 'paused' });
    expect((await dag.node(id, 'second')).state).toBe('pending');
    expect((await dag.control(id, 'resume')).status).toBe(200);
    expect((await dag.control(id, 'resume')).body.detail).toBe('not_paused');
    expect((await dag.waitForState(id)).state).toBe('succeeded');
    // Finished: neither pause nor resume nor cancel applies any more.
    expect((await dag.control(id, 'pause')).body.detail).toBe('not_pausable');
    expect((await dag.control(id, 'resume')).body.detail).toBe('not_paused');
    expect((await dag.control(id, 'cancel')).body.detail).toBe('already_terminal');
    recorded['dag-paused-resumed'] = { workflowId: `dag/${id}` };
  });

  it('cancels: runs in flight are killed (a waiting one never starts), the rest cancelled', async () => {
    const { key } = await newTenant(harness.pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    const oneSlot = dagClient(harness.service.url, key);
    await oneSlot.api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 1 });
    const id = await oneSlot.submit({
      nodes: [shNode('a', 'sleep 60'), shNode('b', 'sleep 60'), gate('gate'), shNode('c', 'true')],
      edges: [edge('a', 'c'), edge('b', 'c')],
    });
    await oneSlot.waitForNode(id, 'gate', ['waiting_approval']);
    // One slot: one root's run runs, the other's waits for the slot (still scheduled).
    const runs = await eventually(async () => {
      const byState: Record<string, string> = {};
      for (const ref of ['a', 'b']) {
        const trackId = (await oneSlot.node(id, ref)).current_track_id;
        if (trackId) byState[(await oneSlot.api.status(trackId)).body.state] = trackId;
      }
      return byState.running && byState.scheduled ? byState : undefined;
    });
    expect((await oneSlot.control(id, 'cancel')).status).toBe(200);
    // Answered once the workflow is cancelled, and it is so only with every node ended: never
    // cancelled beside a node still running, and its result lists final states only.
    expect((await oneSlot.status(id)).state).toBe('cancelled');
    expect(await oneSlot.states(id)).toEqual({
      a: 'cancelled',
      b: 'cancelled',
      gate: 'cancelled',
      c: 'cancelled',
    });
    const result = await oneSlot.api.call<{ nodes: { ref: string; final_state: string }[] }>(
      'GET',
      `/api/v1/workflows/${id}/result`,
    );
    expect(result.body.nodes.map((n) => n.final_state)).toEqual(
      Array(4).fill('cancelled') as string[],
    );
    expect((await oneSlot.control(id, 'cancel')).body.detail).toBe('already_terminal');
    const killed = await oneSlot.api.status(runs.running!);
    expect(killed.body).toMatchObject({ state: 'killed' });
    expect(killed.body.events.at(-1)).toMatchObject({ reason: 'workflow_cancelled' });
    const neverStarted = await oneSlot.api.status(runs.scheduled!);
    expect(neverStarted.body).toMatchObject({ state: 'killed', container_id: null });
    expect(neverStarted.body.events.at(-1)).toMatchObject({ reason: 'workflow_cancelled' });
    await eventually(async () => {
      const closed = await temporal.workflow.getHandle(`dag/${id}`).describe();
      return closed.status.name === 'COMPLETED' ? true : undefined;
    });
    recorded['dag-cancelled'] = { workflowId: `dag/${id}` };
    recorded['run-cancelled-by-dag-running.one-activity'] = { workflowId: `run/${runs.running!}` };
    recorded['run-cancelled-by-dag-waiting'] = { workflowId: `run/${runs.scheduled!}` };
  });

  it('cancels a node waiting out its retry backoff', async () => {
    const id = await dag.submit({
      nodes: [shNode('flaky', 'exit 1', { retries: 3, retry_backoff_seconds: 600 })],
    });
    await dag.waitForNode(id, 'flaky', ['retrying']);
    expect((await dag.control(id, 'cancel')).status).toBe(200);
    const node = await dag.waitForNode(id, 'flaky', ['cancelled'], 10_000);
    expect(node.attempts).toHaveLength(1);
    expect((await dag.status(id)).state).toBe('cancelled');
  });

  it("charges a metered key's node runs up front and commits what they used", async () => {
    const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
    await runAdmin(['tier', 'set', tier, '--metered', 'true'], harness.pool);
    const t = await newTenant(harness.pool, { tier, permissions: ALL_WORKFLOW_PERMISSIONS });
    const metered = dagClient(harness.service.url, t.key);
    const id = await metered.submit({
      nodes: [shNode('a', 'true', { timeout_seconds: 30 }), shNode('b', 'true')],
      edges: [edge('a', 'b')],
    });
    expect((await metered.waitForState(id)).state).toBe('succeeded');
    const trackIds = await Promise.all(
      ['a', 'b'].map(async (ref) => (await metered.node(id, ref)).current_track_id!),
    );
    const ledger = await quotaRecords(t).ledger();
    expect(ledger.map((e) => [e.idempotency_key, e.entry_type])).toEqual(
      trackIds.flatMap((trackId) => [
        [`runs:${trackId}:reserve`, 'reserve'],
        [`runs:${trackId}:commit`, 'commit'],
      ]),
    );
    expect(ledger[0]!.amount).toBe(30);
    expect(-ledger[1]!.amount).toBeGreaterThanOrEqual(25);
  });

  it("takes an operator's cancel (temporal workflow cancel) as the API's cancel", async () => {
    const id = await dag.submit({ nodes: [shNode('long', 'sleep 60'), gate('gate')] });
    const long = await dag.waitForNode(id, 'long', ['running']);
    await dag.api.waitFor(long.current_track_id!, ['running']);
    await temporal.workflow.getHandle(`dag/${id}`).cancel();
    expect((await dag.waitForState(id, ['cancelled'], 30_000)).state).toBe('cancelled');
    await dag.waitForNode(id, 'long', ['cancelled'], 30_000);
    expect(await dag.states(id)).toEqual({ long: 'cancelled', gate: 'cancelled' });
    const run = await dag.api.waitFor(long.current_track_id!, ['killed'], 30_000);
    expect(run.events.at(-1)).toMatchObject({ reason: 'workflow_cancelled' });
  });

  it('retries a node on a finished workflow: it and its downstream closure run again', async () => {
    const id = await dag.submit({
      nodes: [gate('review'), shNode('publish', 'echo \'"done"\''), shNode('notify', 'true')],
      edges: [edge('review', 'publish'), edge('publish', 'notify')],
    });
    await dag.waitForNode(id, 'review', ['waiting_approval']);
    const early = await dag.control(id, 'retry', 'review');
    expect(early).toMatchObject({ status: 409, body: { detail: 'node_not_terminal' } });
    await dag.control(id, 'reject', 'review');
    expect((await dag.waitForState(id)).state).toBe('failed');
    expect(await dag.states(id)).toEqual({
      review: 'failed',
      publish: 'skipped',
      notify: 'skipped',
    });

    const first = await eventually(async () => {
      const execution = await temporal.workflow.getHandle(`dag/${id}`).describe();
      return execution.status.name === 'COMPLETED' ? execution.runId : undefined;
    });
    recorded['dag-node-retried.first'] = { workflowId: `dag/${id}`, runId: first };
    const retried = await dag.control(id, 'retry', 'review');
    expect(retried.status).toBe(200);
    expect(retried.body.status).toBe('running');
    expect(retried.body.message).toContain('3');
    await dag.waitForNode(id, 'review', ['waiting_approval']);
    expect((await dag.status(id)).finished_at).toBeNull();
    await dag.control(id, 'approve', 'review');
    expect((await dag.waitForState(id)).state).toBe('succeeded');
    expect((await dag.node(id, 'publish')).output).toBe('done');
    const kinds = (await dag.events(id))
      .filter((e) => e.kind === 'workflow')
      .map((e) => e.to_state);
    expect(kinds).toEqual(['pending', 'running', 'failed', 'running', 'succeeded']);
    recorded['dag-node-retried.retry'] = { workflowId: `dag/${id}` };
  });

  it('refuses a node retry that would pass max_concurrent_workflows, changing nothing', async () => {
    const { key } = await newTenant(harness.pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    const oneAtATime = dagClient(harness.service.url, key);
    await oneAtATime.api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_workflows: 1 });
    const finished = await oneAtATime.submit({ nodes: [gate('g')] });
    await oneAtATime.waitForNode(finished, 'g', ['waiting_approval']);
    await oneAtATime.control(finished, 'reject', 'g');
    await oneAtATime.waitForState(finished);
    const active = await oneAtATime.submit({ nodes: [gate('g')] });
    await oneAtATime.waitForNode(active, 'g', ['waiting_approval']);
    const refused = await oneAtATime.control(finished, 'retry', 'g');
    expect(refused).toMatchObject({ status: 429, body: { detail: 'workflow_quota_exceeded' } });
    expect(await oneAtATime.status(finished)).toMatchObject({ state: 'failed' });
    expect(await oneAtATime.states(finished)).toEqual({ g: 'failed' });
    await oneAtATime.control(active, 'cancel');
  });

  it('answers events as a replayable cursor feed with rising ids', async () => {
    const id = await passive.messages!;
    await dag.waitForState(id);
    const all = await dag.events(id);
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => a - b));
    const afterSecond = await dag.api.call<{ id: number }[]>(
      'GET',
      `/api/v1/workflows/${id}/events?since=${all[1]!.id}&limit=2`,
    );
    expect(afterSecond.body.map((e) => e.id)).toEqual([all[2]!.id, all[3]!.id]);
  });
});
