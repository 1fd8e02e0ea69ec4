import {
  PARAM_VALUE_MAX_LENGTH,
  assertDeclarations,
  compilePattern,
  matchBudget,
  matchesWithin,
  presentParam,
  resolveParams,
  satisfiesRule,
  type TemplateParam,
} from '../../../services/runs/templates/params';

const param = (fields: Partial<TemplateParam> & { name: string }): TemplateParam => ({
  type: 'string',
  required: false,
  secret: false,
  ...fields,
});

const region = param({ name: 'region', type: 'enum', enum: ['eu', 'us'] });
const tag = param({ name: 'tag', pattern: '[a-z]{2,4}' });
const free = param({ name: 'free', default: 'dflt' });
const token = param({ name: 'token', secret: true, required: true });

describe('a value against its parameter', () => {
  it('a string parameter with a pattern takes only values the pattern matches whole', () => {
    const budget = matchBudget();

    expect(satisfiesRule(tag, 'ab', budget)).toBe(true);
    expect(satisfiesRule(tag, 'abcd', budget)).toBe(true);
    expect(satisfiesRule(tag, 'a', budget)).toBe(false);
    expect(satisfiesRule(tag, 'abcde', budget)).toBe(false);
    expect(satisfiesRule(tag, '1ab', budget)).toBe(false);
    expect(satisfiesRule(tag, 'ab\n', budget)).toBe(false);
  });

  it('an alternation is matched whole too (the pattern is grouped before it is anchored)', () => {
    const either = param({ name: 'e', pattern: 'a|b' });

    expect(satisfiesRule(either, 'a', matchBudget())).toBe(true);
    expect(satisfiesRule(either, 'ab', matchBudget())).toBe(false);
  });

  it('an enum parameter takes only its values, exactly', () => {
    expect(satisfiesRule(region, 'eu', matchBudget())).toBe(true);
    expect(satisfiesRule(region, 'EU', matchBudget())).toBe(false);
    expect(satisfiesRule(region, 'eu ', matchBudget())).toBe(false);
  });

  it('a value is at most 4096 characters (counted as characters), at and past the edge', () => {
    const any = param({ name: 'any' });

    expect(satisfiesRule(any, 'x'.repeat(PARAM_VALUE_MAX_LENGTH), matchBudget())).toBe(true);
    expect(satisfiesRule(any, 'x'.repeat(PARAM_VALUE_MAX_LENGTH + 1), matchBudget())).toBe(false);
    expect(satisfiesRule(any, '🚀'.repeat(PARAM_VALUE_MAX_LENGTH), matchBudget())).toBe(true);
  });

  it('a value never holds a placeholder opening', () => {
    expect(satisfiesRule(param({ name: 'any' }), 'a ${{ token }}', matchBudget())).toBe(false);
    expect(satisfiesRule(param({ name: 'any' }), 'a ${ x } {{ y }}', matchBudget())).toBe(true);
  });

  it('when a pattern backtracks past the budget, then the value is refused and the budget is spent', () => {
    const evil = compilePattern('(a+)+')!;
    const budget = { remainingMs: 30 };
    const startedAt = Date.now();

    expect(matchesWithin(evil, `${'a'.repeat(40)}!`, budget)).toBe('timeout');
    expect(Date.now() - startedAt).toBeLessThan(1000);
    expect(budget.remainingMs).toBeLessThanOrEqual(0);
    expect(matchesWithin(compilePattern('a')!, 'a', budget)).toBe('timeout');
  });

  it('a pattern that does not compile on its own is no pattern', () => {
    expect(compilePattern('a)(b')).toBeNull();
    expect(compilePattern('[')).toBeNull();
    expect(compilePattern('\\p{L}+')).not.toBeNull();
  });
});

describe('assertDeclarations', () => {
  it('when each default meets its own rule, then the declarations pass', () => {
    expect(() =>
      assertDeclarations([free, param({ name: 'r', type: 'enum', enum: ['a'], default: 'a' })]),
    ).not.toThrow();
  });

  it.each([
    ['off its pattern', param({ name: 'p', pattern: '[0-9]+', default: 'abc' })],
    ['not in its enum', param({ name: 'p', type: 'enum', enum: ['a'], default: 'b' })],
    ['holding a placeholder', param({ name: 'p', default: '${{ x }}' })],
  ])('when a default is %s, then 422 invalid_template_param:<name>', (_, p) => {
    expect(() => assertDeclarations([p])).toThrow('invalid_template_param:p');
  });
});

describe('resolveParams', () => {
  const declared = [region, tag, free, token];

  it('when every value is valid, then the values are the given ones and the defaults', () => {
    const values = resolveParams(declared, { region: 'eu', token: 's', tag: 'abc' });

    expect(Object.fromEntries(values)).toEqual({
      region: 'eu',
      tag: 'abc',
      free: 'dflt',
      token: 's',
    });
  });

  it('when an optional parameter has neither value nor default, then it has no value', () => {
    const values = resolveParams(declared, { token: 's' });

    expect([...values.keys()]).toEqual(['free', 'token']);
  });

  it('when a value is given for a parameter with a default, then the value wins (also the empty string)', () => {
    expect(resolveParams([free], { free: '' }).get('free')).toBe('');
  });

  it('when a name is not declared, then 422 unknown_template_param:<name> (before anything else)', () => {
    expect(() => resolveParams(declared, { nope: 'x' })).toThrow('unknown_template_param:nope');
  });

  it('when a required parameter has no value, then 422 missing_template_param:<name>', () => {
    expect(() => resolveParams(declared, {})).toThrow('missing_template_param:token');
  });

  it.each([
    ['not in the enum', { region: 'asia', token: 's' }, 'region'],
    ['off the pattern', { tag: 'ABC', token: 's' }, 'tag'],
    ['over 4096 characters', { free: 'x'.repeat(4097), token: 's' }, 'free'],
  ])('when a value is %s, then 422 invalid_template_param:<name>', (_, given, name) => {
    expect(() => resolveParams(declared, given)).toThrow(`invalid_template_param:${name}`);
  });

  it('when a refusal names a parameter, then its message never holds the value', () => {
    const secretValue = 'ultra-secret-value';
    const enumSecret = param({ name: 'k', type: 'enum', enum: ['a'], secret: true });

    let message = '';
    try {
      resolveParams([enumSecret], { k: secretValue });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe('invalid_template_param:k');
  });

  it('a parameter named __proto__ is a parameter like any other', () => {
    const proto = param({ name: '__proto__', default: 'v' });

    expect(resolveParams([proto], {}).get('__proto__')).toBe('v');
  });
});

describe('presentParam', () => {
  it('shows every field, and never a default for a secret parameter', () => {
    expect(presentParam(region)).toEqual({
      name: 'region',
      type: 'enum',
      required: false,
      secret: false,
      default: null,
      pattern: null,
      enum: ['eu', 'us'],
      description: null,
    });
    expect(presentParam({ ...token, default: 'leak' }).default).toBeNull();
  });
});
