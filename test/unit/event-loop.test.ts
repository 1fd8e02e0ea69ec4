import { watchEventLoop, type EventLoopStall } from '../../platform/event-loop';

const blockFor = (ms: number) => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('event loop watch', () => {
  it('when the event loop is held up past the threshold, then the watch reports how long', async () => {
    const stalls: EventLoopStall[] = [];
    const stop = watchEventLoop((stall) => stalls.push(stall), 80, 300);
    try {
      await sleep(50); // the monitor samples from the next turn of the loop on
      blockFor(200);
      await sleep(700);
      expect(stalls.length).toBeGreaterThanOrEqual(1);
      expect(stalls[0]!.maxMs).toBeGreaterThanOrEqual(150);
    } finally {
      stop();
    }
  });
});
