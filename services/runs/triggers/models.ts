import Joi from 'joi';
import {
  TRIGGER_DISABLED_REASONS,
  TRIGGER_FIRE_OUTCOMES,
  type TriggerFireRow,
  type TriggerRow,
} from '../../../db/runs/triggers';
import { instant, integer, model, nullableInstant, ulid } from '../models';

/** The response models of the trigger operations, and the rows presented as them. */

export const Trigger = model('Trigger', {
  trigger_id: ulid(),
  template_id: ulid(),
  version: integer()
    .allow(null)
    .description("The pinned version; null: the template's latest at each fire."),
  cron: Joi.string().description('Five fields, as given.'),
  timezone: Joi.string().description('IANA zone, as given.'),
  params: Joi.object()
    .pattern(/^/, Joi.string().allow(''))
    .description('The parameter values given, the secret ones left out (secret_params).'),
  secret_params: Joi.array()
    .items(Joi.string())
    .description('The secret parameters given a value: sealed, never shown.'),
  enabled: Joi.boolean().description(
    'false: paused (its Temporal Schedule too); not counted against max_triggers.',
  ),
  disabled_reason: Joi.string()
    .valid(...TRIGGER_DISABLED_REASONS)
    .allow(null)
    .description(
      'Set when a fire could not launch and disabled the trigger: template_deleted, invalid_params (against the version launched), quota_exceeded (a workflow quota of the tenant or the key), key_revoked (the key that created it is revoked or expired), launch_refused (any other refusal of the run path, e.g. an image no longer on the allowlist). null otherwise; PATCH enabled: true clears it.',
    ),
  disabled_detail: Joi.string()
    .allow(null)
    .description("The refusal's REST detail (e.g. template_not_found, daily_quota_exceeded)."),
  created_at: instant(),
  updated_at: instant(),
  next_fire_at: nullableInstant().description(
    "The Temporal Schedule's next action time; null when disabled (or when Temporal could not be asked, on a list).",
  ),
});

export const TriggerList = model('TriggerList', {
  triggers: Joi.array().items(Trigger).description('Newest first.'),
  limit: integer(),
  offset: integer(),
});

export const TriggerFire = model('TriggerFire', {
  occurrence: instant().description('The instant the scheduler fired for (UTC).'),
  wall_time: Joi.string()
    .pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/)
    .description(
      "The local wall time of the trigger's zone the fire stands for (as a schedule fire's).",
    ),
  fired_at: instant().description('When the fire was recorded.'),
  fire_delay_seconds: Joi.number()
    .min(0)
    .description('fired_at − occurrence in seconds, to the millisecond, never below 0.'),
  outcome: Joi.string()
    .valid(...TRIGGER_FIRE_OUTCOMES)
    .description(
      'launched: workflow_id is the workflow this occurrence produced; skipped_disabled: the trigger was disabled when the occurrence came; failed: the launch was refused (error) and the trigger disabled.',
    ),
  workflow_id: ulid().allow(null).description('The workflow launched; null unless launched.'),
  error: Joi.string().allow(null).description("The refusal's REST detail when failed."),
});

export const TriggerFireList = model('TriggerFireList', {
  fires: Joi.array().items(TriggerFire).description('Newest occurrence first.'),
  limit: integer(),
  offset: integer(),
});

export const presentTrigger = (
  t: TriggerRow,
  secretParams: string[],
  nextFireAt: string | null,
) => ({
  trigger_id: t.trigger_id,
  template_id: t.template_id,
  version: t.version,
  cron: t.cron,
  timezone: t.timezone,
  params: t.params,
  secret_params: secretParams,
  enabled: t.enabled,
  disabled_reason: t.disabled_reason,
  disabled_detail: t.disabled_detail,
  created_at: t.created_at,
  updated_at: t.updated_at,
  next_fire_at: nextFireAt,
});

export const presentTriggerFire = (f: TriggerFireRow) => ({
  occurrence: f.occurrence,
  wall_time: f.wall_time,
  fired_at: f.fired_at,
  // numeric(16, 3): exact in a JSON number.
  fire_delay_seconds: Number(f.fire_delay_seconds),
  outcome: f.outcome,
  workflow_id: f.workflow_id,
  error: f.error,
});
