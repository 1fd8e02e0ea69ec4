import { nextWorkflowUlid, ulidTimeMs, workflowUlid } from '../../../workflows/runs/ids';

describe('event ids made by the run workflow', () => {
  it('when two ids are made on the same workflow clock, then the second sorts after the first', () => {
    const nowMs = Date.parse('2026-11-22T21:00:00Z');
    let previous: string | null = null;
    const ids: string[] = [];
    // Randomness that would put the second id first if only the clock were used.
    const randoms = [0.99, 0.01, 0.5];
    for (const r of randoms) ids.push((previous = nextWorkflowUlid(previous, nowMs, () => r)));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
  });

  it('when the clock has moved past the previous id, then the id carries the clock', () => {
    const earlier = workflowUlid(1_000, () => 0.5);
    expect(ulidTimeMs(nextWorkflowUlid(earlier, 5_000, () => 0.5))).toBe(5_000);
    expect(ulidTimeMs(nextWorkflowUlid(earlier, 1_000, () => 0.5))).toBe(1_001);
    expect(ulidTimeMs(nextWorkflowUlid(null, 1_000, () => 0.5))).toBe(1_000);
  });
});
