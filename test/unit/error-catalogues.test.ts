import { isRetryable, type ErrorCatalogue } from '../../platform/errors';
import { LEDGER_ERRORS, ledgerError } from '../../services/ledger/errors';
import { SHOWN_AS_INVALID_REQUEST } from '../../api/ledger/envelope';
import { LLMS_TXT } from '../../api/ledger/llms';
import { openApiDocument as ledgerDocument } from '../../api/ledger/openapi';
import { RUNS_ERRORS, runsError } from '../../services/runs/errors';
import { openApiDocument as runsDocument } from '../../api/runs/openapi';
import { QUOTA_ERRORS, quotaError } from '../../services/quota/errors';

interface Response {
  description?: string;
  content?: Record<string, { schema?: { $ref?: string } }>;
}

/** Every error response of a document: its status and its description. */
function errorResponses(document: unknown): { status: number; description: string }[] {
  const paths = (document as { paths: Record<string, Record<string, unknown>> }).paths;
  const found: { status: number; description: string }[] = [];
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const responses = (operation as { responses?: Record<string, Response> }).responses ?? {};
      for (const [status, response] of Object.entries(responses)) {
        const schema = response.content?.['application/json']?.schema;
        if (Number(status) >= 400 && schema?.$ref === '#/components/schemas/Error')
          found.push({ status: Number(status), description: response.description ?? '' });
      }
    }
  }
  return found;
}

/** Every string of a JSON document (descriptions, decisions, examples). */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

describe('the ledger catalogue and its OpenAPI document', () => {
  const listed = (
    ledgerDocument as unknown as {
      components: {
        schemas: { Error: { properties: { error: { properties: { code: { enum: string[] } } } } } };
      };
    }
  ).components.schemas.Error.properties.error.properties.code.enum;
  /** The codes a client can see: malformed JSON and 415 are shown as INVALID_REQUEST. */
  const shown = Object.keys(LEDGER_ERRORS).filter((code) => !SHOWN_AS_INVALID_REQUEST.has(code));

  it('lists every code of the catalogue a client can see, and no other', () => {
    expect([...listed].sort()).toEqual([...shown].sort());
    for (const code of listed) expect(LEDGER_ERRORS).toHaveProperty(code);
  });

  it('names under each error status only catalogue codes of that status', () => {
    const misplaced: string[] = [];
    for (const { status, description } of errorResponses(ledgerDocument)) {
      for (const [token] of description.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b/g)) {
        const definition = (LEDGER_ERRORS as ErrorCatalogue)[token];
        if (definition === undefined) {
          if (token.includes('_')) misplaced.push(`${status} ${token}: not in the catalogue`);
        } else if (definition.status !== status) {
          misplaced.push(`${status} ${token}: the catalogue says ${definition.status}`);
        }
      }
    }
    expect(misplaced).toEqual([]);
  });

  it('gives every "<status> <CODE>" in its prose the status of the catalogue', () => {
    const wrong: string[] = [];
    for (const text of strings(ledgerDocument)) {
      for (const [, status, code] of text.matchAll(
        /\b([1-5]\d\d) ([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b/g,
      )) {
        const definition = (LEDGER_ERRORS as ErrorCatalogue)[code!];
        if (definition?.status !== Number(status))
          wrong.push(`${status} ${code}: the catalogue says ${definition?.status ?? 'nothing'}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("the ledger catalogue and its agents' guide (/llms.txt)", () => {
  it('lists under "Error codes" every code a client can see, each after the status the catalogue gives it', () => {
    const section = LLMS_TXT.slice(
      LLMS_TXT.indexOf('## Error codes'),
      LLMS_TXT.indexOf('## Limits'),
    );
    const wrong: string[] = [];
    const listed = new Set<string>();
    let status = 0;
    for (const [token] of section.matchAll(/\b(?:[1-5]\d\d|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)\b/g)) {
      if (/^\d+$/.test(token)) {
        status = Number(token);
        continue;
      }
      const definition = (LEDGER_ERRORS as ErrorCatalogue)[token];
      if (definition === undefined && !token.includes('_')) continue;
      listed.add(token);
      if (definition?.status !== status || SHOWN_AS_INVALID_REQUEST.has(token))
        wrong.push(`${status} ${token}: the catalogue says ${definition?.status ?? 'nothing'}`);
    }
    expect(wrong).toEqual([]);
    const shown = Object.keys(LEDGER_ERRORS).filter((code) => !SHOWN_AS_INVALID_REQUEST.has(code));
    expect(shown.filter((code) => !listed.has(code))).toEqual([]);
  });
});

describe('the runs catalogue and its OpenAPI document', () => {
  it('names under each error status only catalogue codes of that status', () => {
    const misplaced: string[] = [];
    for (const { status, description } of errorResponses(runsDocument)) {
      // A code in backticks, alone or with the suffix its message carries (`invalid_image:<ref>`).
      for (const [, code] of description.matchAll(
        /`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?::[^`]*)?`/g,
      )) {
        const definition = (RUNS_ERRORS as ErrorCatalogue)[code!];
        if (definition?.status !== status)
          misplaced.push(
            `${status} ${code}: the catalogue says ${definition?.status ?? 'nothing'}`,
          );
      }
    }
    expect(misplaced).toEqual([]);
  });
});

describe('retryable, as the ledger decides whether a refusal is final', () => {
  /** The 409s whose throwers always say when (Retry-After): a retry with the same key runs again. */
  const TRANSIENT_CONFLICTS = [
    'LOCK_TIMEOUT',
    'CONFLICT_RETRY',
    'IDEMPOTENCY_IN_FLIGHT',
    'POSTING_FROZEN',
  ];

  it.each(Object.entries(LEDGER_ERRORS))(
    '%s is retryable exactly when a 5xx, a 429 or a conflict that always sends Retry-After',
    (code, definition) => {
      expect(definition.retryable).toBe(
        definition.status >= 500 || definition.status === 429 || TRANSIENT_CONFLICTS.includes(code),
      );
    },
  );

  it("takes a refusal's Retry-After as retryable whatever its code (a frozen account)", () => {
    expect(isRetryable(ledgerError('ACCOUNT_NOT_ACTIVE'), LEDGER_ERRORS)).toBe(false);
    expect(
      isRetryable(ledgerError('ACCOUNT_NOT_ACTIVE', { retryAfterSeconds: 5 }), LEDGER_ERRORS),
    ).toBe(true);
  });

  it('counts a code its catalogue lacks as retryable (the edge answers it 500)', () => {
    expect(isRetryable(runsError('not_terminal'), LEDGER_ERRORS)).toBe(true);
  });
});

describe('the typed factories', () => {
  it("default the message to the catalogue's and keep the thrower's details", () => {
    const refused = ledgerError('INSUFFICIENT_AVAILABLE', { details: { account_id: 'a' } });
    expect(refused).toMatchObject({
      code: 'INSUFFICIENT_AVAILABLE',
      message: LEDGER_ERRORS.INSUFFICIENT_AVAILABLE.message,
      details: { account_id: 'a' },
    });
    expect(runsError('invalid_image', { message: 'invalid_image:x' }).message).toBe(
      'invalid_image:x',
    );
    expect(quotaError('NOT_FOUND').message).toBe(QUOTA_ERRORS.NOT_FOUND.message);
  });

  it('refuse a code outside their catalogue at compile time (npm run typecheck holds this)', () => {
    const neverCalled = () => [
      // @ts-expect-error -- a runs code is not a ledger code
      ledgerError('run_not_found'),
      // @ts-expect-error -- the ledger's spelling is not the runs service's
      runsError('RUN_NOT_FOUND'),
    ];
    expect(neverCalled).toBeInstanceOf(Function);
  });
});
