import fc from 'fast-check';
import Joi from 'joi';
import { compileJsonSchemaCheck } from '../../../api/http/json-schema-check';
import { QUOTA_OPERATIONS } from '../../../api/quota/routes';
import { LIMITS } from '../../../services/quota/schemas';

/**
 * The consumption routes take a body their documented JSON Schema accepts without joi
 * (`bodyCheckedByJsonSchema`). That is sound only if every body the JSON Schema accepts is one joi
 * accepts, to the same value: checked here on bodies drawn at and past every bound.
 */
const checkedOperations = Object.values(QUOTA_OPERATIONS).filter(
  (op) => op.request?.bodyCheckedByJsonSchema,
);

const JOI_OPTIONS: Joi.ValidationOptions = { abortEarly: false, convert: true };

/** Text around a bound: empty, at it, one past it, with NUL, control characters and braces. */
const text = (max: number) =>
  fc.oneof(
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.constantFrom('', 'a', '{', '\u0000', '\u007f', 'tenant/a b', '😀'),
    fc.constantFrom(max - 1, max, max + 1).map((n) => 'x'.repeat(n)),
    fc.constantFrom(max, max + 1).map((n) => '😀'.repeat(n)),
  );
const amount = fc.oneof(
  fc.constantFrom(0, 1, -1, 1.5, LIMITS.amountMax, LIMITS.amountMax + 2, '5', null, 1e300),
  fc.integer({ min: -5, max: 1_000_000 }),
);
const item = fc.record(
  { resource: text(LIMITS.resourceChars), amount, extra: fc.constant(1) },
  { requiredKeys: [] },
);
const items = fc.oneof(
  fc.array(item, { maxLength: 4 }),
  fc
    .constantFrom(LIMITS.itemsMax, LIMITS.itemsMax + 1)
    .map((n) => Array.from({ length: n }, () => ({ resource: 'r', amount: 1 }))),
  fc.constantFrom(null, 'items', {}),
);
const metadata = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue(), { maxKeys: 3 }),
  fc
    .constantFrom(64, 65)
    .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))),
  fc.constantFrom(null, [], 'm'),
);
const body = fc.record(
  {
    subject: text(LIMITS.subjectChars),
    items,
    idempotency_key: fc.oneof(text(LIMITS.idempotencyKeyChars), fc.constant(null)),
    metadata,
    unknown: fc.constant(true),
  },
  { requiredKeys: [] },
);
const wellFormed = fc.record({
  subject: fc.stringMatching(/^[a-z0-9:/_-]{1,40}$/),
  items: fc.array(
    fc.record({
      resource: fc.stringMatching(/^[a-z_]{1,20}$/),
      amount: fc.integer({ min: 1, max: LIMITS.amountMax }),
    }),
    { minLength: 1, maxLength: 5 },
  ),
});

describe.each(checkedOperations.map((op) => [op.operationId, op] as const))(
  '%s: its body checked by its JSON Schema',
  (_, op) => {
    const schema = op.request!.body!;
    const accepted = compileJsonSchemaCheck(schema);

    it('accepts only bodies joi accepts, as the value joi gives', () => {
      fc.assert(
        fc.property(body, (input) => {
          const byJsonSchema = structuredClone(input);
          if (!accepted(byJsonSchema)) return;
          const byJoi = schema.validate(structuredClone(input), JOI_OPTIONS);
          expect(byJoi.error).toBeUndefined();
          expect(byJsonSchema).toEqual(byJoi.value);
        }),
        { numRuns: 3_000 },
      );
    });

    it('takes every well-formed body (so the hot route skips joi)', () => {
      fc.assert(
        fc.property(wellFormed, (input) => {
          const checked = { ...input, ...(op.operationId === 'check' ? {} : { metadata: {} }) };
          expect(accepted(structuredClone(input))).toBe(true);
          expect(schema.validate(input, JOI_OPTIONS).value).toEqual(checked);
        }),
      );
    });
  },
);

it('the consumption routes are the ones checked by their JSON Schema', () => {
  expect(checkedOperations.map((op) => op.operationId).sort()).toEqual([
    'check',
    'consume',
    'refund',
  ]);
});
