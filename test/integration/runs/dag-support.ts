import { eventually } from '../../support/services';
import { IMAGE, client } from './support';

export const ALL_WORKFLOW_PERMISSIONS =
  'svc_run_submit,svc_run_read,svc_run_control,svc_run_delete,svc_tenant_admin,svc_workflow_submit,svc_workflow_read,svc_workflow_control';

export interface WorkflowStatus {
  workflow_id: string;
  state: string;
  started_at: string | null;
  finished_at: string | null;
  nodes: {
    ref: string;
    type: string;
    state: string;
    attempt: number;
    current_track_id: string | null;
    exit_code: number | null;
  }[];
}

export interface NodeDetail {
  ref: string;
  state: string;
  attempt: number;
  attempts: string[];
  current_track_id: string | null;
  output: unknown;
  started_at: string | null;
  finished_at: string | null;
}

export interface WorkflowEvent {
  id: number;
  node_ref: string | null;
  kind: string;
  to_state: string;
  detail: Record<string, unknown>;
  created_at: string;
}

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

/** A container node of the local registry's busybox running `sh -c script`. */
export const shNode = (ref: string, script: string, extra: Record<string, unknown> = {}) => ({
  ref,
  image: IMAGE,
  command: ['sh', '-c', script],
  timeout_seconds: 120,
  ...extra,
});
export const gate = (ref: string) => ({ ref, type: 'approval' });
export const edge = (from: string, to: string, condition = 'on_success') => ({
  from,
  to,
  condition,
});

/** The workflow routes of one key, and waits on their states. */
export function dagClient(baseUrl: string, key: string) {
  const api = client(baseUrl, key);
  const status = async (id: string) =>
    (await api.call<WorkflowStatus>('GET', `/api/v1/workflows/${id}`)).body;
  const node = async (id: string, ref: string) =>
    (await api.call<NodeDetail>('GET', `/api/v1/workflows/${id}/nodes/${ref}`)).body;
  const states = async (id: string) =>
    Object.fromEntries((await status(id)).nodes.map((n) => [n.ref, n.state]));
  return {
    api,
    status,
    node,
    states,
    submit: async (body: Record<string, unknown>) => {
      const reply = await api.call<{ workflow_id: string }>('POST', '/api/v1/workflows', body);
      if (reply.status !== 202)
        throw new Error(`submit: ${reply.status} ${JSON.stringify(reply.body)}`);
      return reply.body.workflow_id;
    },
    control: (id: string, action: string, ref?: string) =>
      api.call<{ status?: string; message?: string; detail?: string }>(
        'POST',
        ref === undefined
          ? `/api/v1/workflows/${id}/${action}`
          : `/api/v1/workflows/${id}/nodes/${ref}/${action}`,
      ),
    events: async (id: string) =>
      (await api.call<WorkflowEvent[]>('GET', `/api/v1/workflows/${id}/events?limit=1000`)).body,
    /** Waits until the workflow is in one of `wanted` (terminal by default). */
    waitForState: (id: string, wanted: string[] = TERMINAL, timeoutMs = 90_000) =>
      eventually(
        async () => {
          const s = await status(id);
          return wanted.includes(s.state) ? s : undefined;
        },
        timeoutMs,
        200,
      ),
    /** Waits until node `ref` is in one of `wanted`. */
    waitForNode: (id: string, ref: string, wanted: string[], timeoutMs = 90_000) =>
      eventually(
        async () => {
          const n = await node(id, ref);
          return wanted.includes(n.state) ? n : undefined;
        },
        timeoutMs,
        200,
      ),
  };
}
export type DagClient = ReturnType<typeof dagClient>;
