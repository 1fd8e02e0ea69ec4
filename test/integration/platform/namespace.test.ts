import { WorkflowNotFoundError } from '@temporalio/client';
import { createTemporalClient } from '../../../api/platform/temporal';
import { runWorkflowId } from '../../../workflows/runs/definitions';
import { DEFAULT_TEST_NAMESPACE } from '../../support/test-namespace';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from '../runs/support';

describe("the tests' own Temporal namespace", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it("when a test submits a run, then its workflow is in the tests' namespace and not in the operator's", async () => {
    expect(config.temporalNamespace).toBe(
      process.env.TEMPORAL_TEST_NAMESPACE ?? DEFAULT_TEST_NAMESPACE,
    );
    expect(config.temporalNamespace).not.toBe('default');
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { track_id } = (await api.submit({ image: IMAGE, command: ['true'] })).body;
    await api.waitFor(track_id, ['exited']);

    const tests = createTemporalClient(config);
    const operators = createTemporalClient({ ...config, temporalNamespace: 'default' });
    try {
      const described = await tests.workflow.getHandle(runWorkflowId(track_id)).describe();
      expect(described.status.name).toBe('COMPLETED');
      await expect(
        operators.workflow.getHandle(runWorkflowId(track_id)).describe(),
      ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    } finally {
      await Promise.all([tests.connection.close(), operators.connection.close()]);
    }
  });
});
