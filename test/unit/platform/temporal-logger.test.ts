import { Writable } from 'node:stream';
import pino from 'pino';
import { temporalLogger } from '../../../worker/temporal-logger';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe("the worker's Temporal logger", () => {
  it("writes Temporal's lines as pino JSON with their metadata, INFO as debug detail", () => {
    const { logger, lines } = capture('debug');
    const temporal = temporalLogger(logger);
    temporal.info('Worker state changed', { state: 'RUNNING', sdkComponent: 'worker' });
    temporal.warn('Activity failed', { activityType: 'runContainer' });
    temporal.log('ERROR', 'core: poll failed');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 20,
        component: 'temporal',
        msg: 'Worker state changed',
        state: 'RUNNING',
        sdkComponent: 'worker',
      }),
      expect.objectContaining({ level: 40, msg: 'Activity failed', activityType: 'runContainer' }),
      expect.objectContaining({ level: 50, msg: 'core: poll failed' }),
    ]);
  });

  it('keeps to the process level: at info, Temporal INFO lines are not written', () => {
    const { logger, lines } = capture('info');
    const temporal = temporalLogger(logger);
    temporal.info('Worker state changed');
    temporal.debug('activation');
    temporal.warn('slow');
    expect(lines.map((l) => l.msg)).toEqual(['slow']);
  });
});
