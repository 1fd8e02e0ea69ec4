import Joi from 'joi';
import { WORKFLOW_STATES } from '../../../db/runs/workflows';
import { EDGE_CONDITIONS, NODE_STATES } from '../../../contracts/runs/dag-rules';
import { instant, integer, model, nullableInstant, nullableText, text, ulid } from '../models';

/** The response models of the workflow operations (the spec's Workflow models). */
const workflowState = () => Joi.string().valid(...WORKFLOW_STATES);
const nodeState = () => Joi.string().valid(...NODE_STATES);
const nodeType = () => Joi.string().valid('container', 'approval');
const exitCode = () =>
  integer().allow(null).description("The exit code of the node's last run; null until it exits.");
const output = () =>
  Joi.any().description(
    'The JSON parsed from the last stdout line of the node\'s last run (`{"error": "inputs_too_large"}` when its inputs were too large); null when none.',
  );

export const WorkflowSubmitResponse = model('WorkflowSubmitResponse', {
  workflow_id: ulid(),
  status: Joi.string().valid('pending'),
  clamped: Joi.boolean().description(
    "True when a node's requested cpu_limit, memory_limit_mb or timeout_seconds was reduced to the tenant maximum.",
  ),
});

const workflowFields = {
  workflow_id: ulid(),
  tenant_id: text(),
  name: nullableText().max(128),
  state: workflowState(),
  failure_policy: Joi.string().valid('fail_fast', 'continue'),
  template_id: nullableText().description('The template it was launched from; null: submitted.'),
  submitted_at: instant(),
  started_at: nullableInstant().description('null until the first node launches'),
  finished_at: nullableInstant().description('null until terminal'),
  tags: Joi.array().items(text()),
};

export const WorkflowNode = model('WorkflowNode', {
  ref: text(),
  type: nodeType(),
  state: nodeState(),
  attempt: integer().min(0).description('Runs made for the node so far (0: none yet).'),
  current_track_id: ulid().allow(null).description("The node's latest run; null before its first."),
  exit_code: exitCode(),
});

export const WorkflowEdge = model('WorkflowEdge', {
  from_ref: text(),
  to_ref: text(),
  condition: Joi.string().valid(...EDGE_CONDITIONS),
});

export const WorkflowStatus = model('WorkflowStatus', {
  ...workflowFields,
  nodes: Joi.array().items(WorkflowNode).description('In submitted order.'),
  edges: Joi.array().items(WorkflowEdge).description('In submitted order.'),
});

export const WorkflowList = model('WorkflowList', {
  workflows: Joi.array()
    .items(model('WorkflowSummary', workflowFields))
    .description('Newest first; nodes and edges are read per workflow.'),
  limit: integer(),
  offset: integer(),
});

export const NodeDetail = model('NodeDetail', {
  ref: text(),
  type: nodeType(),
  state: nodeState(),
  attempt: integer().min(0),
  attempts: Joi.array().items(ulid()).description('Track ids of its runs, oldest first.'),
  current_track_id: ulid().allow(null),
  exit_code: exitCode(),
  output: output(),
  started_at: nullableInstant(),
  finished_at: nullableInstant(),
});

export const WorkflowResult = model('WorkflowResult', {
  workflow_id: ulid(),
  state: Joi.string().valid('succeeded', 'failed', 'cancelled'),
  duration_seconds: Joi.number()
    .min(0)
    .description('finished_at − started_at (0 when no node ever launched).'),
  nodes: Joi.array().items(
    Joi.object({
      ref: text(),
      final_state: nodeState(),
      exit_code: exitCode(),
      attempts: integer().min(0).description('How many runs the node made.'),
      output: output(),
    }).prefs({ presence: 'required' }),
  ),
  failed_nodes: Joi.array().items(text()).description('Refs of the nodes that ended failed.'),
});

export const WorkflowEvent = model('WorkflowEvent', {
  id: integer().min(1).description('Monotonic cursor: pass the highest seen as `since`.'),
  workflow_id: ulid(),
  node_ref: nullableText().description('null for an event of the workflow itself'),
  kind: Joi.string().valid('workflow', 'node'),
  to_state: Joi.string().valid(...new Set([...WORKFLOW_STATES, ...NODE_STATES])),
  detail: Joi.object().unknown(true).description('e.g. the attempt number, has_output'),
  created_at: instant(),
});

export const WorkflowEvents = Joi.array().items(WorkflowEvent).id('WorkflowEvents');

export const ControlResponse = model('WorkflowControlResponse', {
  status: Joi.string().description(
    "The new state: the workflow's for pause, resume, cancel and retry, the node's for approve and reject.",
  ),
  message: text(),
});
