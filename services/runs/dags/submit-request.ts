import Joi from 'joi';
import { boundedText } from '../../../platform/text';
import { EDGE_CONDITIONS } from '../../../contracts/runs/dag-rules';
import { IMAGE_REFERENCE_MAX_LENGTH, IMAGE_REFERENCE_PATTERN } from '../image-reference';
import { InlineWebhook } from '../webhooks/inline';
import {
  imageReference,
  runCommand,
  runCpuLimit,
  runEnv,
  runMemoryLimitMb,
  runName,
  runTags,
  runTimeoutSeconds,
} from '../schemas';

/**
 * What a workflow (DAG) submit may carry: the body the route validates, and the schema a
 * template's definition is judged by (templates/definition.ts), so both take one rule.
 */

export const NODE_REF_MAX_LENGTH = 128;
/**
 * Nodes one request may carry, whatever the tenant's quota: past it the body is refused by its
 * schema (422) before any work; under it, more than the key's max_nodes_per_workflow is 400
 * too_many_nodes.
 */
export const WORKFLOW_NODES_REQUEST_MAX = 1000;
/** Edges one request may carry (five per node of the largest request). */
export const WORKFLOW_EDGES_MAX = 5 * WORKFLOW_NODES_REQUEST_MAX;
export const NODE_RETRIES_MAX = 10;
export const RETRY_BACKOFF_SECONDS_DEFAULT = 10;
/** A fixed wait between attempts longer than an hour is better made a new submit. */
export const RETRY_BACKOFF_SECONDS_MAX = 3600;

export const nodeRef = () => boundedText(NODE_REF_MAX_LENGTH, { min: 1 });

/** JSON Schema of what joi's `.when('type')` on `image` enforces, stated once for the node. */
const IMAGE_RULE = {
  if: { properties: { type: { const: 'approval' } }, required: ['type'] },
  else: {
    required: ['image'],
    properties: {
      image: {
        type: 'string',
        minLength: 1,
        maxLength: IMAGE_REFERENCE_MAX_LENGTH,
        pattern: IMAGE_REFERENCE_PATTERN,
      },
    },
  },
};

const NodeSpec = Joi.object({
  ref: nodeRef().required().description('Unique in the workflow.'),
  type: Joi.string().valid('container', 'approval').default('container'),
  image: Joi.any()
    .when('type', {
      is: 'approval',
      then: Joi.any().strip(),
      otherwise: imageReference().required(),
    })
    .meta({
      'x-schema': {
        $replace: true,
        description:
          "Required for a container node (422 without it), checked as a run's image (400 `invalid_image:<ref>`); ignored for an approval node.",
      },
    }),
  command: runCommand(),
  // The node's unknown keys are stripped; an env name is still refused as for a run.
  env: runEnv().prefs({ stripUnknown: false }),
  inputs_from: Joi.array()
    .items(nodeRef())
    .max(WORKFLOW_NODES_REQUEST_MAX)
    .default([])
    .description(
      'Upstream refs whose output is injected as `SVC_INPUT_<REF>`; each must be a node of the workflow (400 invalid_graph). Creates no edge.',
    ),
  retries: Joi.number().integer().min(0).max(NODE_RETRIES_MAX).default(0),
  retry_backoff_seconds: Joi.number()
    .integer()
    .min(0)
    .max(RETRY_BACKOFF_SECONDS_MAX)
    .default(RETRY_BACKOFF_SECONDS_DEFAULT)
    .description('Fixed wait between attempts, not exponential.'),
  timeout_seconds: runTimeoutSeconds(),
  cpu_limit: runCpuLimit(),
  memory_limit_mb: runMemoryLimitMb(),
})
  .prefs({ stripUnknown: { objects: true } })
  .meta({ 'x-schema': { additionalProperties: true, ...IMAGE_RULE } })
  .description(
    'Unknown keys are ignored (the spec). An approval node runs nothing: its image, command, env, retries and limits are not kept.',
  )
  .id('NodeSpec');

const EdgeSpec = Joi.object({
  from: nodeRef().required(),
  to: nodeRef().required(),
  condition: Joi.string()
    .valid(...EDGE_CONDITIONS)
    .default('on_success'),
}).id('EdgeSpec');

export const WorkflowSubmitRequest = Joi.object({
  name: runName(),
  tags: runTags(),
  failure_policy: Joi.string().valid('fail_fast', 'continue').default('fail_fast'),
  nodes: Joi.array()
    .items(NodeSpec)
    .min(1)
    .max(WORKFLOW_NODES_REQUEST_MAX)
    .required()
    .description(
      "At most the key's max_nodes_per_workflow (400 too_many_nodes), and never more than 1000 (422).",
    ),
  edges: Joi.array()
    .items(EdgeSpec)
    .max(WORKFLOW_EDGES_MAX)
    .default([])
    .description('One edge per pair of nodes; the graph must be acyclic (400 invalid_graph).'),
  webhook: InlineWebhook,
})
  .required()
  .unknown(false)
  .description(
    'Unknown top-level, edge and `webhook` fields are refused (422); unknown node fields are ignored.',
  )
  .id('WorkflowSubmitRequest');
