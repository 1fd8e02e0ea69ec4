import Joi from 'joi';

/**
 * A JSON Schema pattern for text without U+0000: Postgres text and jsonb cannot hold it, and no
 * process argument or environment variable can carry it.
 */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

/** Characters as JSON Schema's maxLength counts them (code points; joi's max counts UTF-16 units). */
const characterCount = (value: string) => [...value].length;

/**
 * A string of at most `maxCharacters` characters without U+0000: the bound the OpenAPI document
 * states (maxLength and NO_NUL_PATTERN), so an emoji counts once here as it does for a client.
 */
export function boundedText(maxCharacters: number): Joi.StringSchema {
  return Joi.string().custom((value: string, helpers) => {
    if (value.includes('\u0000'))
      return helpers.message({ custom: '{{#label}} must not contain U+0000 (NUL)' });
    // A string no longer in UTF-16 units than the bound is no longer in characters either.
    if (value.length > maxCharacters && characterCount(value) > maxCharacters)
      return helpers.error('string.max', { limit: maxCharacters });
    return value;
  });
}
