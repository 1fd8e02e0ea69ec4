import type Joi from 'joi';

/**
 * A custom joi error: the field's label, then `text` word for word. Joi reads a custom message as
 * a template, where `{` opens a variable: a regular expression's quantifier ({1,63}) garbled the
 * message into "Invalid template variable", and text from a parser could do the same. So the text
 * travels as a value of the template, never as the template itself.
 */
export function labelledMessage(helpers: Joi.CustomHelpers, text: string): Joi.ErrorReport {
  return helpers.message({ custom: '{{#label}}{{#text}}' }, { text });
}
