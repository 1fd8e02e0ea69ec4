import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { refusalOf } from '../../../services/runs/dags/control';
import { acceptedNodes, type NodeRequest } from '../../../services/runs/dags/submit';
import type { EffectiveLimits } from '../../../services/runs/limits';

const LIMITS: EffectiveLimits = {
  memory_limit_mb: 512,
  cpu_cores: 2,
  timeout_seconds: 300,
  concurrent_runs: 5,
  daily_runs: 100,
  workflow_nodes: 50,
  retention_days: 30,
};

const container = (ref: string, extra: Partial<NodeRequest> = {}): NodeRequest => ({
  ref,
  type: 'container',
  image: 'registry.example/x:1',
  command: ['true'],
  env: { A: '1' },
  inputs_from: [],
  retries: 2,
  retry_backoff_seconds: 10,
  timeout_seconds: null,
  cpu_limit: null,
  memory_limit_mb: null,
  ...extra,
});

describe('workflow submit: the nodes as stored', () => {
  it('when a container node asks for nothing, then it gets a run’s defaults, not clamped', () => {
    const { nodes, clamped } = acceptedNodes([container('a')], LIMITS);
    expect(clamped).toBe(false);
    expect(nodes).toEqual([
      {
        ref: 'a',
        type: 'container',
        spec: {
          image: 'registry.example/x:1',
          command: ['true'],
          env: { A: '1' },
          inputs_from: [],
          retries: 2,
          retry_backoff_seconds: 10,
          cpu_limit: 1,
          memory_limit_mb: 256,
          timeout_seconds: 300,
        },
      },
    ]);
  });

  it('when one node asks above a maximum, then its limit is clamped and the workflow says clamped', () => {
    const { nodes, clamped } = acceptedNodes(
      [container('a', { cpu_limit: 2 }), container('b', { memory_limit_mb: 513 })],
      LIMITS,
    );
    expect(clamped).toBe(true);
    expect(nodes.map((n) => [n.spec.cpu_limit, n.spec.memory_limit_mb])).toEqual([
      [2, 256],
      [1, 512],
    ]);
  });

  it('when a node is an approval gate, then it keeps only what the engine reads, with no retries', () => {
    const gate: NodeRequest = { ...container('g', { timeout_seconds: 9999 }), type: 'approval' };
    delete gate.image;
    const { nodes, clamped } = acceptedNodes([gate], LIMITS);
    expect(clamped).toBe(false);
    expect(nodes).toEqual([
      {
        ref: 'g',
        type: 'approval',
        spec: { command: [], env: {}, inputs_from: [], retries: 0, retry_backoff_seconds: 10 },
      },
    ]);
  });
});

describe('workflow control: what a failed update means', () => {
  const refused = (message: string) =>
    new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ message }));

  it.each(['not_pausable', 'node_not_terminal', 'node_not_found', 'workflow_quota_exceeded'])(
    'when the workflow refuses with %s, then that is the refusal',
    (code) => {
      expect(refusalOf(refused(code))).toBe(code);
    },
  );

  it('when the workflow refuses with another message, then it is a plain conflict', () => {
    expect(refusalOf(refused('something else'))).toBe('conflict');
  });

  it('when there is no open execution, then the execution has ended', () => {
    expect(refusalOf(new WorkflowNotFoundError('not found', 'dag/x', undefined))).toBe(
      'execution_ended',
    );
    expect(refusalOf(new Error('workflow execution already completed'))).toBe('execution_ended');
  });

  it('when the error is anything else, then it is not a refusal', () => {
    expect(refusalOf(new Error('boom'))).toBeNull();
  });
});
