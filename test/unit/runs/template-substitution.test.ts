import {
  REDACTED,
  assertPlaceholders,
  canonicalPlaceholder,
  isNodeEnvValue,
  pathText,
  placeholdersIn,
  redactDefinition,
  secretsUsed,
  substitute,
  substituteSecrets,
} from '../../../services/runs/templates/substitution';

const params = [
  { name: 'image', secret: false },
  { name: 'region', secret: false },
  { name: 'token', secret: true },
];

const definition = {
  name: 'etl-${{ region }}',
  tags: ['${{region}}', 'fixed'],
  nodes: [
    {
      ref: 'build-${{ region }}',
      image: '${{ image }}',
      command: ['sh', '-c', 'echo ${{  region  }} ${{ region }}'],
      env: { TOKEN: 'Bearer ${{ token }}', REGION: '${{ region }}', PLAIN: 'x' },
    },
  ],
  edges: [{ from: 'build-${{ region }}', to: 'b' }],
};

describe('placeholders', () => {
  it('when strings hold placeholders, then each is found with its path, whitespace inside the braces allowed', () => {
    const uses = placeholdersIn(definition).map((u) => `${pathText(u.path)}=${u.name}`);

    expect(uses).toEqual([
      'name=region',
      'tags[0]=region',
      'nodes[0].ref=region',
      'nodes[0].image=image',
      'nodes[0].command[2]=region',
      'nodes[0].command[2]=region',
      'nodes[0].env.TOKEN=token',
      'nodes[0].env.REGION=region',
      'edges[0].from=region',
    ]);
  });

  it('when an object key looks like a placeholder, then it is not one (keys are never substituted)', () => {
    expect(placeholdersIn({ env: { '${{ a }}': 'x' } })).toEqual([]);
  });

  it('when text only resembles a placeholder, then it is not one', () => {
    expect(placeholdersIn(['${{ a', '${ a }}', '{{ a }}', '$${{x}', '${{ {a} }}'])).toEqual([]);
    expect(placeholdersIn(5)).toEqual([]);
  });

  it('a node env value is nodes[i].env.<key> and nothing else', () => {
    expect(isNodeEnvValue(['nodes', 0, 'env', 'A'])).toBe(true);
    expect(isNodeEnvValue(['nodes', 0, 'env'])).toBe(false);
    expect(isNodeEnvValue(['nodes', 0, 'command', 0])).toBe(false);
    expect(isNodeEnvValue(['nodes', '0', 'env', 'A'])).toBe(false);
    expect(isNodeEnvValue(['env', 0, 'env', 'A'])).toBe(false);
  });
});

describe('assertPlaceholders', () => {
  it('when every placeholder names a declared parameter and the secret one stands in env, then it passes', () => {
    expect(() => assertPlaceholders(definition, params)).not.toThrow();
  });

  it('when a placeholder names no parameter, then 422 unknown_template_param:<name>', () => {
    expect(() => assertPlaceholders({ name: '${{ nope }}' }, params)).toThrow(
      'unknown_template_param:nope',
    );
  });

  it.each([
    ['the image', { nodes: [{ image: '${{ token }}' }] }],
    ['a command item', { nodes: [{ command: ['echo ${{ token }}'] }] }],
    ['the name', { name: '${{ token }}' }],
    ['a tag', { tags: ['${{ token }}'] }],
    ['an edge ref', { edges: [{ from: '${{ token }}' }] }],
  ])('when a secret parameter stands in %s, then 422 secret_param_outside_env:<name>', (_, d) => {
    expect(() => assertPlaceholders(d, params)).toThrow('secret_param_outside_env:token');
  });

  it('lists the secret parameters the definition uses, each once', () => {
    expect(secretsUsed(definition, params)).toEqual(['token']);
    expect(secretsUsed({ name: 'x' }, params)).toEqual([]);
  });
});

describe('substitute', () => {
  const values = new Map([
    ['image', '127.0.0.1:5000/busybox:latest'],
    ['region', 'eu'],
  ]);

  it('when a run substitutes, then every placeholder of a value is replaced and a secret one is kept canonically', () => {
    const result = substitute(definition, values, new Set(['token']));

    expect(result).toEqual({
      name: 'etl-eu',
      tags: ['eu', 'fixed'],
      nodes: [
        {
          ref: 'build-eu',
          image: '127.0.0.1:5000/busybox:latest',
          command: ['sh', '-c', 'echo eu eu'],
          env: { TOKEN: 'Bearer ${{ token }}', REGION: 'eu', PLAIN: 'x' },
        },
      ],
      edges: [{ from: 'build-eu', to: 'b' }],
    });
  });

  it('when a parameter has no value, then its placeholders become the empty string', () => {
    expect(substitute({ name: 'a${{ region }}b' }, new Map(), new Set())).toEqual({ name: 'ab' });
  });

  it('when a value looks like a placeholder, then it is not substituted again (one pass)', () => {
    const result = substitute({ name: '${{ a }}' }, new Map([['a', '${{ b }}']]), new Set());

    expect(result).toEqual({ name: '${{ b }}' });
  });

  it('leaves numbers, booleans, nulls and keys as they are, and the definition untouched', () => {
    const d = { nodes: [{ retries: 2, x: null, y: true, env: { '${{ a }}': '${{ a }}' } }] };
    const copy = structuredClone(d);

    expect(substitute(d, new Map([['a', 'v']]), new Set())).toEqual({
      nodes: [{ retries: 2, x: null, y: true, env: { '${{ a }}': 'v' } }],
    });
    expect(d).toEqual(copy);
  });

  it('the engine substitutes a secret into an env value, in any spacing, and leaves the others', () => {
    const secrets = new Map([['token', 's3cr3t']]);

    expect(substituteSecrets('Bearer ${{ token }}', secrets)).toBe('Bearer s3cr3t');
    expect(substituteSecrets('${{token}}:${{   token }}', secrets)).toBe('s3cr3t:s3cr3t');
    expect(substituteSecrets('${{ other }}', secrets)).toBe('${{ other }}');
    expect(canonicalPlaceholder('token')).toBe('${{ token }}');
  });
});

describe('redactDefinition', () => {
  it('when a definition is read, then every env value is [redacted], keys and everything else kept', () => {
    const redacted = redactDefinition(definition);

    expect(redacted).toEqual({
      ...definition,
      nodes: [
        {
          ...definition.nodes[0],
          env: { TOKEN: REDACTED, REGION: REDACTED, PLAIN: REDACTED },
        },
      ],
    });
    expect(JSON.stringify(redacted)).not.toContain('Bearer');
  });

  it('when nodes or env are not what a valid definition holds, then they are left alone', () => {
    expect(redactDefinition({ nodes: 'x' })).toEqual({ nodes: 'x' });
    expect(redactDefinition({ nodes: [null, { env: 'x' }, { ref: 'a' }] })).toEqual({
      nodes: [null, { env: 'x' }, { ref: 'a' }],
    });
  });
});
