import Joi from 'joi';

/**
 * A JSON Schema pattern for text without U+0000: Postgres text and jsonb cannot hold it, and no
 * process argument or environment variable can carry it.
 */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

/** Characters as JSON Schema's maxLength counts them (code points; joi's max counts UTF-16 units). */
const characterCount = (value: string) => [...value].length;

export interface TextRule {
  /** Fewest characters, when more than one. */
  min?: number;
  /** The characters allowed, as a JSON Schema pattern of the whole string (default NO_NUL_PATTERN). */
  pattern?: string;
  /** What the pattern refuses, for the message: `control characters or braces`. */
  refuses?: string;
}

/**
 * A string of `min`..`maxCharacters` characters matching `pattern` (by default: without U+0000;
 * never empty unless the caller adds `.allow('')`, as every joi string),
 * counted as JSON Schema counts them (an emoji once, where joi's max counts UTF-16 units twice).
 * Its OpenAPI form states the same bounds (minLength, maxLength, pattern).
 */
export function boundedText(maxCharacters: number, rule: TextRule = {}): Joi.StringSchema {
  const pattern = rule.pattern ?? NO_NUL_PATTERN;
  const allowed = new RegExp(pattern, 'u');
  const refuses = rule.refuses ?? 'U+0000 (NUL)';
  const min = rule.min ?? 0;
  return Joi.string()
    .custom((value: string, helpers) => {
      if (!allowed.test(value))
        return helpers.message({ custom: `{{#label}} must not contain ${refuses}` });
      // A string no longer in UTF-16 units than the bound is no longer in characters either.
      if (value.length > maxCharacters && characterCount(value) > maxCharacters)
        return helpers.error('string.max', { limit: maxCharacters });
      if (characterCount(value) < min) return helpers.error('string.min', { limit: min });
      return value;
    })
    .meta({
      'x-schema': { ...(min > 0 ? { minLength: min } : {}), maxLength: maxCharacters, pattern },
    });
}
