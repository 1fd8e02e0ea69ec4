import { jsonbSafe } from '../../platform/jsonb';

describe('jsonbSafe', () => {
  it('keeps a NUL and a lone surrogate as their escape text', () => {
    expect(jsonbSafe({ m: 'a\u0000b', s: 'x\ud800y' })).toEqual({ m: 'a\\u0000b', s: 'x\\ud800y' });
  });

  it('leaves text that already reads \\u0000, valid pairs and other characters alone', () => {
    const value = { pattern: '[^\\u0000-\\u001f]', emoji: '🚀 é', quote: '"\\' };
    expect(jsonbSafe(value)).toEqual(value);
  });

  it('escapes a NUL that follows an escaped backslash', () => {
    expect(jsonbSafe({ m: '\\\u0000' })).toEqual({ m: '\\\\u0000' });
  });
});
