import { demultiplexLogs } from '../../activities/docker/containers';

const frame = (stream: 1 | 2, text: string): Buffer => {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
};

describe('demultiplexLogs', () => {
  it('splits interleaved stdout and stderr frames in order', () => {
    const logs = demultiplexLogs(
      Buffer.concat([frame(1, 'a\n'), frame(2, 'oops\n'), frame(1, 'b\n')]),
    );
    expect(logs.stdout.toString()).toBe('a\nb\n');
    expect(logs.stderr.toString()).toBe('oops\n');
  });

  it('ignores a truncated trailing header', () => {
    const logs = demultiplexLogs(Buffer.concat([frame(1, 'x'), Buffer.from([1, 0, 0])]));
    expect(logs.stdout.toString()).toBe('x');
  });
});
