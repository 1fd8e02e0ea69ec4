import Joi from 'joi';
import {
  SCHEDULE_FIRE_OUTCOMES,
  type ScheduleFireRow,
  type ScheduleRow,
} from '../../../db/runs/schedules';
import { instant, integer, model, nullableInstant, ulid } from '../models';

/** The response models of the schedule operations, and the rows presented as them. */

const summaryFields = {
  schedule_id: ulid(),
  cron: Joi.string().description('Five fields, as given.'),
  timezone: Joi.string().description('IANA zone, as given.'),
  labels: Joi.object().pattern(/^/, Joi.string().allow('')).description('As given; {} when none.'),
  enabled: Joi.boolean().description(
    'false: paused (its Temporal Schedule too); not counted against max_schedules.',
  ),
  created_at: instant(),
  updated_at: instant(),
  next_fire_at: nullableInstant().description(
    "The Temporal Schedule's next action time; null when disabled (or when Temporal could not be asked, on a list).",
  ),
};

export const Schedule = model('Schedule', {
  ...summaryFields,
  payload: Joi.any().description('As given (any JSON value; object keys in jsonb order).'),
});

export const ScheduleSummary = model('ScheduleSummary', summaryFields).description(
  'A schedule without its payload (GET /api/v1/schedules/{schedule_id} has it).',
);

export const ScheduleList = model('ScheduleList', {
  schedules: Joi.array().items(ScheduleSummary).description('Newest first.'),
  limit: integer(),
  offset: integer(),
});

export const ScheduleFire = model('ScheduleFire', {
  occurrence: instant().description(
    'The instant the scheduler fired for (UTC): a skipped wall time fires moved forward by the gap.',
  ),
  wall_time: Joi.string()
    .allow(null)
    .pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/)
    .description(
      "The local wall time of the schedule's zone this fire stands for (YYYY-MM-DDTHH:MM:SS, no offset): one fire per wall time, so a repeated one (fall back) fires once, and a skipped one (spring forward) names the skipped time. Null for fires recorded before this rule.",
    ),
  fired_at: instant().description('When the fire was recorded.'),
  fire_delay_seconds: Joi.number()
    .min(0)
    .description('fired_at − occurrence in seconds, to the millisecond, never below 0.'),
  outcome: Joi.string()
    .valid(...SCHEDULE_FIRE_OUTCOMES)
    .description(
      'enqueued: the schedule.fired notice was written; skipped_disabled: the schedule was disabled when the occurrence came.',
    ),
  deliveries_enqueued: integer()
    .min(0)
    .description(
      "The subscriptions (the tenant's live endpoints naming schedule.fired, and the schedule's inline webhook) the notice matched when it was written; 0 unless enqueued.",
    ),
  event_id: Joi.string().allow(null).description('The schedule.fired event; null unless enqueued.'),
});

export const ScheduleFireList = model('ScheduleFireList', {
  fires: Joi.array().items(ScheduleFire).description('Newest occurrence first.'),
  limit: integer(),
  offset: integer(),
});

const summaryOf = (s: ScheduleRow, nextFireAt: string | null) => ({
  schedule_id: s.schedule_id,
  cron: s.cron,
  timezone: s.timezone,
  labels: s.labels,
  enabled: s.enabled,
  created_at: s.created_at,
  updated_at: s.updated_at,
  next_fire_at: nextFireAt,
});

export const presentSchedule = (s: ScheduleRow, nextFireAt: string | null) => ({
  ...summaryOf(s, nextFireAt),
  payload: s.payload,
});
export const presentScheduleSummary = summaryOf;

export const presentScheduleFire = (f: ScheduleFireRow) => ({
  occurrence: f.occurrence,
  wall_time: f.wall_time,
  fired_at: f.fired_at,
  // numeric(16, 3): exact in a JSON number.
  fire_delay_seconds: Number(f.fire_delay_seconds),
  outcome: f.outcome,
  deliveries_enqueued: f.deliveries_enqueued,
  event_id: f.event_id,
});
