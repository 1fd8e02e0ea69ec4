import Joi from 'joi';
import { instant, integer, model, nullableText, text, ulid } from '../models';

/** The response models of the template operations. */

const templateName = () =>
  Joi.string()
    .allow(null)
    .description('Unique among the tenant’s templates not deleted; null: none.');

const ParamView = model('TemplateParamView', {
  name: text(),
  type: Joi.string().valid('string', 'enum'),
  required: Joi.boolean(),
  secret: Joi.boolean().description(
    'Its value is never stored in clear nor shown; it may stand only in node env values.',
  ),
  default: nullableText().description('null: none (a secret parameter never has one).'),
  pattern: nullableText().description('A string parameter’s pattern; null: any value.'),
  enum: Joi.array().items(text()).allow(null).description('An enum parameter’s values.'),
  description: nullableText(),
});

const summaryFields = {
  template_id: ulid(),
  name: templateName(),
  description: nullableText(),
  version: integer().min(1),
  created_at: instant(),
  updated_at: instant().description('The last rename, description or publication.'),
};

export const Template = model('Template', {
  ...summaryFields,
  version: integer().min(1).description('The version shown: the latest, or the one asked for.'),
  latest_version: integer().min(1),
  versions: Joi.array().items(integer().min(1)).description('Every version, oldest first.'),
  params: Joi.array().items(ParamView).description('The version’s declarations, in order.'),
  definition: Joi.object()
    .unknown(true)
    .description(
      "The version's definition, redacted: every node env value is `[redacted]` (keys kept); the rest as registered, placeholders included.",
    ),
});

export const TemplateList = model('TemplateList', {
  templates: Joi.array()
    .items(
      model('TemplateSummary', {
        ...summaryFields,
        version: integer().min(1).description('The latest version.'),
      }),
    )
    .description('Newest first; params and definitions are read per template.'),
  limit: integer(),
  offset: integer(),
});

export const TemplateRunAccepted = model('TemplateRunAccepted', {
  workflow_id: ulid(),
  template_id: ulid(),
  version: integer().min(1).description('The version that was run.'),
  status: Joi.string().valid('pending'),
  clamped: Joi.boolean().description(
    "True when a node's requested cpu_limit, memory_limit_mb or timeout_seconds was reduced to the tenant maximum.",
  ),
});
