import { PERMISSIONS } from '../../../db/runs/permissions';
import { toolInputOf } from '../../../api/mcp';
import { JSON_RPC_ERROR, mcpTransportResponses } from '../../../api/mcp/contract';
import { errorLines, LLMS_TXT, permissionLines } from '../../../api/runs/llms';
import { mcpGuide, permissionsOf, RUNS_MCP_TOOLS, toolNameOf } from '../../../api/runs/mcp';
import { RUNS_OPERATIONS } from '../../../api/runs/routes';
import { RUNS_ERRORS } from '../../../services/runs/errors';
import { openApiDocument } from '../../../api/runs/openapi';

/** The spec's parity set, the template tools and webhook recovery, as the issues list them. */
const REQUIRED = [
  'submit_run',
  'get_run',
  'list_runs',
  'get_run_result',
  'get_run_logs',
  'get_run_utilization',
  'pause_run',
  'resume_run',
  'stop_run',
  'kill_run',
  'delete_run',
  'submit_workflow',
  'get_workflow',
  'list_workflows',
  'get_workflow_result',
  'list_workflow_events',
  'get_workflow_node',
  'pause_workflow',
  'resume_workflow',
  'cancel_workflow',
  'retry_workflow_node',
  'approve_workflow_node',
  'reject_workflow_node',
  'get_tenant_quotas',
  'put_tenant_quotas',
  'get_usage',
  'list_audit',
  'create_template',
  'list_templates',
  'get_template',
  'run_template',
  'recover_webhook_endpoint',
];

describe('the runs MCP tools', () => {
  it('are the spec parity set, the template tools and webhook recovery, named by operationId', () => {
    expect(RUNS_MCP_TOOLS.length).toBeGreaterThanOrEqual(25);
    expect(RUNS_MCP_TOOLS.map((t) => t.name).sort()).toEqual([...REQUIRED].sort());
    for (const tool of RUNS_MCP_TOOLS)
      expect(tool.name).toBe(toolNameOf(tool.operation.operationId));
    expect(toolNameOf('retryWorkflowNode')).toBe('retry_workflow_node');
  });

  it('are each a documented operation, its input schema generated from its route schemas', () => {
    const documented = openApiDocument.paths as Record<string, Record<string, unknown>>;
    for (const tool of RUNS_MCP_TOOLS) {
      const { operation } = tool;
      expect(documented[operation.path]?.[operation.method]).toBeDefined();
      expect(tool.inputSchema).toEqual(toolInputOf(operation.request).schema);
    }
  });

  it('state the permission(s) each route checks', () => {
    for (const tool of RUNS_MCP_TOOLS) {
      const needed = permissionsOf(tool.operation);
      expect(needed.length).toBeGreaterThan(0);
      for (const permission of needed) expect(tool.description).toContain(`\`${permission}\``);
    }
    expect(permissionsOf(RUNS_OPERATIONS.templateRun)).toEqual([
      'svc_template_run',
      'svc_workflow_submit',
    ]);
    expect(permissionsOf(RUNS_OPERATIONS.ping)).toEqual([]);
  });

  it('are annotated truthfully: reads read only, ends destructive, submits not idempotent', () => {
    const byName = Object.fromEntries(RUNS_MCP_TOOLS.map((t) => [t.name, t.annotations]));
    for (const tool of RUNS_MCP_TOOLS) {
      const reads = tool.operation.method === 'get';
      expect({ tool: tool.name, readOnly: tool.annotations.readOnlyHint }).toEqual({
        tool: tool.name,
        readOnly: reads,
      });
      if (reads) expect(tool.annotations.destructiveHint).toBeUndefined();
    }
    for (const name of [
      'kill_run',
      'stop_run',
      'delete_run',
      'cancel_workflow',
      'put_tenant_quotas',
    ])
      expect(byName[name]).toMatchObject({ destructiveHint: true, idempotentHint: true });
    for (const name of ['submit_run', 'submit_workflow', 'run_template', 'create_template'])
      expect(byName[name]).toMatchObject({ destructiveHint: false, idempotentHint: false });
    expect(byName.pause_run).toMatchObject({ destructiveHint: false, idempotentHint: true });
    expect(byName.recover_webhook_endpoint).toMatchObject({
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    });
  });
});

describe('the runs /llms.txt', () => {
  it('lists every permission with the routes that check it', () => {
    const lines = permissionLines().split('\n');
    expect(lines.map((line) => line.split(':')[0])).toEqual(PERMISSIONS.map((p) => `- ${p}`));
    expect(permissionLines()).toContain('- svc_template_run: POST /api/v1/templates/{ref}/run');
    expect(permissionLines()).toMatch(
      /- svc_workflow_submit: POST \/api\/v1\/workflows, POST \/api\/v1\/templates\/\{ref\}\/run/,
    );
  });

  it('lists every error detail of the catalogue under its status', () => {
    const text = errorLines();
    for (const definition of Object.values(RUNS_ERRORS)) {
      const line = text.split('\n').find((l) => l.startsWith(`- ${definition.status}: `));
      expect(line).toContain(definition.message);
    }
  });

  it('has every section the issue names, the MCP one listing every tool', () => {
    for (const heading of [
      '## Auth',
      '## Permissions',
      '## Run lifecycle',
      '## DAG (workflow) lifecycle',
      '## Webhooks and signature verification',
      '## Retry rule',
      '## Errors',
      '## MCP',
    ])
      expect(LLMS_TXT).toContain(heading);
    for (const tool of RUNS_MCP_TOOLS) expect(mcpGuide()).toContain(`- ${tool.name}: `);
    expect(LLMS_TXT).toContain('X-Svc-Signature: sha256=');
  });
});

describe('mcpTransportResponses', () => {
  it("documents the transport's answers, the 415 in either envelope", () => {
    const errorBody = { type: 'object', required: ['detail'] };
    const responses = mcpTransportResponses(errorBody);
    expect(Object.keys(responses).sort()).toEqual(['200', '202', '406', '415']);
    expect(responses['202']!.schema).toBeUndefined();
    expect(responses['415']!.schema).toEqual({ oneOf: [errorBody, JSON_RPC_ERROR] });
  });
});
