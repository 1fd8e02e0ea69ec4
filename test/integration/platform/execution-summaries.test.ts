import type { Client } from '@temporalio/client';
import { createTemporalClient } from '../../../platform/temporal';
import { runWorkflowId } from '../../../contracts/runs/run';
import { dagWorkflowId } from '../../../contracts/runs/dag';
import { holdWorkflowId } from '../../../contracts/ledger/hold';
import {
  DAG_STATE,
  HOLD_EXPIRES_AT,
  RUN_STATE,
  TENANT_ID,
} from '../../../contracts/shared/search-attributes';
import { eventually } from '../../support/services';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from '../runs/support';
import { ALL_WORKFLOW_PERMISSIONS, dagClient, shNode, edge } from '../runs/dag-support';
import { LedgerHarness } from '../ledger/support';

jest.setTimeout(120_000);

const SECRET = 'sEcReT-env-value-42';

/** What a person sees of an execution in the Web UI: its summary, details and search attributes. */
async function seen(temporal: Client, workflowId: string) {
  const handle = temporal.workflow.getHandle(workflowId);
  const description = await eventually(() => handle.describe().catch(() => undefined), 15_000);
  return {
    description,
    summary: (await description.staticSummary()) ?? '',
    details: (await description.staticDetails()) ?? '',
  };
}

describe('executions that explain themselves in the Web UI', () => {
  let h: Harness;
  let temporal: Client;
  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await temporal?.connection.close();
    await h?.close();
  });

  it('when a run is submitted, then its execution shows its image, program and tenant, no env value nor argument, and RunState its end', async () => {
    const { key, tenantId } = await newTenant(h.pool);
    const api = client(h.service.url, key);
    const { track_id } = (
      await api.submit({
        image: IMAGE,
        command: ['sh', '-c', `echo ${SECRET} >/dev/null`],
        env: { API_TOKEN: SECRET },
      })
    ).body;
    await api.waitFor(track_id, ['exited', 'failed']);

    const { description, summary, details } = await seen(temporal, runWorkflowId(track_id));
    expect(summary).toBe(`run ${IMAGE} · sh (+2 args) · tenant ${tenantId}`);
    expect(details).toContain(`\`${IMAGE}\``);
    expect(details).toContain('`API_TOKEN`');
    expect(`${summary}${details}`).not.toContain(SECRET);
    expect(description.typedSearchAttributes.get(RUN_STATE)).toBe('exited');
    expect(description.typedSearchAttributes.get(TENANT_ID)).toBe(tenantId);
  });

  it('when a DAG is submitted, then its execution shows its name, node count and tenant, its node runs theirs, and DagState its end', async () => {
    const { key, tenantId } = await newTenant(h.pool, { permissions: ALL_WORKFLOW_PERMISSIONS });
    const dag = dagClient(h.service.url, key);
    const id = await dag.submit({
      name: 'nightly etl',
      nodes: [shNode('a', 'true', { env: { DB_PASSWORD: SECRET } }), shNode('b', 'true')],
      edges: [edge('a', 'b')],
    });
    const ended = await dag.waitForState(id);
    expect(ended.state).toBe('succeeded');

    const { description, summary, details } = await seen(temporal, dagWorkflowId(id));
    expect(summary).toBe(`DAG "nightly etl" · 2 nodes · tenant ${tenantId}`);
    expect(details).toContain('Nodes: 2');
    expect(description.typedSearchAttributes.get(DAG_STATE)).toBe('succeeded');

    const trackId = ended.nodes.find((n) => n.ref === 'a')!.current_track_id!;
    const node = await seen(temporal, runWorkflowId(trackId));
    expect(node.summary).toBe(`run ${IMAGE} · sh (+2 args) · tenant ${tenantId}`);
    expect(`${node.summary}${node.details}`).not.toContain(SECRET);
  });
});

describe('a ledger hold that explains itself', () => {
  const h = new LedgerHarness();
  let temporal: Client;
  beforeAll(async () => {
    await h.start();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await temporal?.connection.close();
    await h.stop();
  });

  it('when a hold is placed, then its execution shows its amount, asset, accounts and expiry, and HoldExpiresAt is its expiry', async () => {
    const t = await h.tenant();
    const eur = await h.assetType(t, 2, 'EUR');
    const cash = await h.account(t, eur, { normal_side: 'debit', balance_floor: null });
    const payee = await h.account(t, eur, { normal_side: 'credit' });
    const expiresAt = new Date(Date.now() + 3_600_000);
    expiresAt.setMilliseconds(0);
    const hold = await t.poster.post('/v1/transactions', {
      pending: true,
      expires_at: expiresAt.toISOString(),
      entries: [
        { account_id: cash, direction: 'debit', amount: '12.50' },
        { account_id: payee, direction: 'credit', amount: '12.50' },
      ],
    });
    expect(hold.status).toBe(201);
    const id = hold.body.transaction_id as string;

    const { description, summary, details } = await seen(temporal, holdWorkflowId(id));
    expect(summary).toBe(
      `hold 12.50 EUR: ${cash.slice(0, 8)}… → ${payee.slice(0, 8)}… · expires ${expiresAt.toISOString()} · tenant ${t.tenantId.slice(0, 12)}…`,
    );
    expect(details).toContain(`\`${cash}\``);
    expect(details).toContain(`\`${payee}\``);
    expect(description.typedSearchAttributes.get(HOLD_EXPIRES_AT)).toEqual(expiresAt);
    await t.poster.post(`/v1/transactions/${id}/void`);
  });
});
