import {
  RATE_LIMIT_RESPONSE_HEADERS,
  policyField,
  stateField,
} from '../../api/http/rate-limit-fields';

describe('RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers)', () => {
  const tenant = { name: 'tenant', quota: 600, windowSeconds: 60 };

  it('states a policy as a quoted name with q and w, and its state with r and t', () => {
    expect(policyField(tenant)).toBe('"tenant";q=600;w=60');
    expect(stateField(tenant, { remaining: 599, resetSeconds: 59.2 })).toBe('"tenant";r=599;t=60');
  });

  it('never states a negative remainder or reset, nor a window under a second, and rounds a window up', () => {
    expect(stateField(tenant, { remaining: -3, resetSeconds: -1 })).toBe('"tenant";r=0;t=0');
    expect(policyField({ name: 'address', quota: 20, windowSeconds: 0.4 })).toBe(
      '"address";q=20;w=1',
    );
    expect(policyField({ name: 'address', quota: 20, windowSeconds: 2.5 })).toBe(
      '"address";q=20;w=3',
    );
  });

  it('refuses a name that is not a plain identifier (it would break the Structured Field)', () => {
    expect(() => policyField({ ...tenant, name: 'a"b' })).toThrow(/policy name/);
  });

  it('documents patterns that the fields it writes match', () => {
    const policy = new RegExp(RATE_LIMIT_RESPONSE_HEADERS['RateLimit-Policy'].schema.pattern);
    const state = new RegExp(RATE_LIMIT_RESPONSE_HEADERS.RateLimit.schema.pattern);
    expect(policyField(tenant)).toMatch(policy);
    expect(stateField(tenant, { remaining: 0, resetSeconds: 3 })).toMatch(state);
    expect('"tenant";r=-1;t=3').not.toMatch(state);
  });
});
