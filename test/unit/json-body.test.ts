import { jsonNestingDepth } from '../../api/http/json-body';

describe('jsonNestingDepth', () => {
  it('counts objects and arrays as levels', () => {
    expect(jsonNestingDepth('1')).toBe(0);
    expect(jsonNestingDepth('{}')).toBe(1);
    expect(jsonNestingDepth('{"a":[{"b":1}]}')).toBe(3);
  });

  it('ignores brackets inside strings, including escaped quotes', () => {
    expect(jsonNestingDepth('{"a":"[[[{{{"}')).toBe(1);
    expect(jsonNestingDepth('{"a":"\\"[[["}')).toBe(1);
    expect(jsonNestingDepth('["\\\\",[1]]')).toBe(2);
  });

  it('measures the deepest branch, not the sum', () => {
    expect(jsonNestingDepth('[[1],[2],[[3]]]')).toBe(3);
  });

  it('at 64 levels and one past', () => {
    expect(jsonNestingDepth('['.repeat(64) + ']'.repeat(64))).toBe(64);
    expect(jsonNestingDepth('['.repeat(65) + ']'.repeat(65))).toBe(65);
  });
});
