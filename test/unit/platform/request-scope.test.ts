import { currentRequestId, withRequestId } from '../../../platform/request-scope';

describe('the request scope', () => {
  it('answers the request being served through its awaits and timers, and none outside one', async () => {
    expect(currentRequestId()).toBeUndefined();
    const seen = await Promise.all(
      ['a', 'b'].map((id) =>
        withRequestId(id, async () => {
          await new Promise((resolve) => setTimeout(resolve, id === 'a' ? 20 : 5));
          return currentRequestId();
        }),
      ),
    );
    expect(seen).toEqual(['a', 'b']);
    expect(currentRequestId()).toBeUndefined();
  });
});
