import {
  TEMPLATE_DEFINITION_MAX_BYTES,
  TEMPLATE_RUN_DEFINITION_MAX_BYTES,
  assertDefinition,
  runDefinition,
} from '../../../services/runs/templates/definition';

const IMAGE = '127.0.0.1:5000/busybox:latest';
const params = [
  { name: 'image', secret: false },
  { name: 'retries', secret: false },
  { name: 'msg', secret: false },
  { name: 'token', secret: true },
];
const node = (extra: Record<string, unknown> = {}) => ({
  ref: 'a',
  image: IMAGE,
  command: ['echo', '${{ msg }}'],
  ...extra,
});

describe('a definition at register', () => {
  it('when it is a valid submit body with placeholders, then it passes', () => {
    expect(() =>
      assertDefinition(
        { name: 'n', nodes: [node({ env: { T: '${{ token }}' } })], edges: [] },
        params,
      ),
    ).not.toThrow();
  });

  it('when a placeholder makes a value invalid until substituted, then that value is judged at run', () => {
    expect(() =>
      assertDefinition(
        { nodes: [node({ image: '${{ image }}', retries: '${{ retries }}' })] },
        params,
      ),
    ).not.toThrow();
  });

  it('when a value without a placeholder breaks the submit schema, then 422 invalid_template_definition with joi’s message', () => {
    expect(() => assertDefinition({ nodes: [node({ retries: 11 })] }, params)).toThrow(
      'invalid_template_definition: nodes[0].retries must be less than or equal to 10',
    );
    expect(() => assertDefinition({ nodes: [] }, params)).toThrow(
      /^invalid_template_definition: nodes must contain at least 1 items$/,
    );
    expect(() => assertDefinition({ nodes: [node()], colour: 'x' }, params)).toThrow(
      'invalid_template_definition: colour is not allowed',
    );
  });

  it('when a string or a key anywhere holds U+0000, then 422 (it is stored as given, in jsonb)', () => {
    const message = 'invalid_template_definition: definition must not contain U+0000 (NUL)';
    expect(() =>
      assertDefinition({ nodes: [node({ image: '${{ image }}\u0000' })] }, params),
    ).toThrow(message);
    expect(() => assertDefinition({ nodes: [node({ colour: ['\u0000'] })] }, params)).toThrow(
      message,
    );
    expect(() => assertDefinition({ nodes: [node({ ['a\u0000']: 1 })] }, params)).toThrow(message);
  });

  it('when it carries a webhook, then 422 (a run gives its own)', () => {
    expect(() =>
      assertDefinition(
        { nodes: [node()], webhook: { url: 'https://x.example', events: ['*'] } },
        params,
      ),
    ).toThrow(/^invalid_template_definition: webhook is not allowed/);
  });

  it('when a placeholder names no parameter or a secret stands outside env, then 422 naming it', () => {
    expect(() => assertDefinition({ nodes: [node({ ref: '${{ x }}' })] }, params)).toThrow(
      'unknown_template_param:x',
    );
    expect(() =>
      assertDefinition({ nodes: [node({ command: ['${{ token }}'] })] }, params),
    ).toThrow('secret_param_outside_env:token');
  });

  it('is at most 256 KiB of JSON, at and past the edge', () => {
    // Ten env values share the padding: one is at most 32768 characters.
    const keys = Array.from({ length: 10 }, (_, i) => `PAD${i}`);
    const padded = (values: string[]) => ({
      nodes: [node({ env: Object.fromEntries(keys.map((k, i) => [k, values[i]!])) })],
    });
    const sized = (bytes: number) => {
      const pad = bytes - Buffer.byteLength(JSON.stringify(padded(keys.map(() => ''))));
      const share = Math.ceil(pad / keys.length);
      return padded(keys.map((_, i) => 'x'.repeat(Math.max(0, Math.min(share, pad - i * share)))));
    };

    expect(Buffer.byteLength(JSON.stringify(sized(TEMPLATE_DEFINITION_MAX_BYTES)))).toBe(
      TEMPLATE_DEFINITION_MAX_BYTES,
    );
    expect(() => assertDefinition(sized(TEMPLATE_DEFINITION_MAX_BYTES), params)).not.toThrow();
    expect(() => assertDefinition(sized(TEMPLATE_DEFINITION_MAX_BYTES + 1), params)).toThrow(
      'template_too_large',
    );
  });
});

describe('a definition at run', () => {
  const definition = {
    name: 'etl',
    tags: ['a'],
    nodes: [node({ image: '${{ image }}', retries: '${{ retries }}', env: { T: '${{ token }}' } })],
  };
  const values = new Map([
    ['image', IMAGE],
    ['retries', '3'],
    ['msg', 'hi'],
  ]);

  it('when substituted, then it is the submit body as its schema accepts it, with the run’s name, tags and webhook', () => {
    const webhook = { url: 'https://hooks.example/x', events: ['workflow.*'] };
    const body = runDefinition(definition, values, new Set(['token']), {
      name: 'renamed',
      tags: ['b', 'a'],
      webhook,
    });

    expect(body).toEqual({
      name: 'renamed',
      tags: ['a', 'b'],
      failure_policy: 'fail_fast',
      edges: [],
      webhook,
      nodes: [
        {
          ref: 'a',
          type: 'container',
          image: IMAGE,
          command: ['echo', 'hi'],
          env: { T: '${{ token }}' },
          inputs_from: [],
          retries: 3,
          retry_backoff_seconds: 10,
          timeout_seconds: null,
          cpu_limit: null,
          memory_limit_mb: null,
        },
      ],
    });
  });

  it('when the run gives no name or tags, then the definition’s stay', () => {
    const body = runDefinition(definition, values, new Set(['token']), { tags: [] });

    expect([body.name, body.tags]).toEqual(['etl', ['a']]);
    expect(runDefinition(definition, values, new Set(), { name: null, tags: [] }).name).toBeNull();
  });

  it('when a substituted value breaks the submit schema, then 422 invalid_template_definition with joi’s message', () => {
    const bad = new Map([...values, ['retries', 'many']]);

    expect(() => runDefinition(definition, bad, new Set(['token']), { tags: [] })).toThrow(
      'invalid_template_definition: nodes[0].retries must be a number',
    );
  });

  it('when the merged tags pass the submit bound, then 422 invalid_template_definition', () => {
    const tags = Array.from({ length: 32 }, (_, i) => `t${i}`);

    expect(() => runDefinition(definition, values, new Set(), { tags })).toThrow(
      'invalid_template_definition: tags must contain less than or equal to 32 items',
    );
  });

  it('when substitution would pass 1 MiB of JSON, then 422 template_too_large, before substituting', () => {
    const many = {
      nodes: [node({ command: Array.from({ length: 200 }, () => '${{ msg }}') })],
    };
    const big = new Map([['msg', 'x'.repeat(4096)]]);

    expect(2 * 200 * 4096).toBeGreaterThan(TEMPLATE_RUN_DEFINITION_MAX_BYTES);
    expect(() => runDefinition(many, big, new Set(), { tags: [] })).not.toThrow();
    const more = { nodes: [many.nodes[0]!, { ...many.nodes[0]!, ref: 'b' }] };
    expect(() => runDefinition(more, big, new Set(), { tags: [] })).toThrow('template_too_large');
  });
});
