import Joi from 'joi';
import { TIMER_STATES, type TimerRow } from '../../../db/runs/timers';
import { instant, integer, model, nullableInstant, ulid } from '../models';

/** The response models of the timer operations, and the rows presented as them. */

const summaryFields = {
  timer_id: ulid(),
  state: Joi.string()
    .valid(...TIMER_STATES)
    .description('pending until it fires (fired) or is deleted first (cancelled).'),
  fire_at: instant().description('As given, kept to the millisecond.'),
  labels: Joi.object().pattern(/^/, Joi.string().allow('')).description('As given; {} when none.'),
  created_at: instant(),
  fired_at: nullableInstant().description('null until fired.'),
  cancelled_at: nullableInstant().description('null unless cancelled.'),
  fire_delay_seconds: Joi.number()
    .min(0)
    .allow(null)
    .description(
      'fired_at − fire_at in seconds, to the millisecond, never below 0 (a fire_at already past when created counts from fire_at); null until fired.',
    ),
};

export const Timer = model('Timer', {
  ...summaryFields,
  payload: Joi.any().description('As given (any JSON value; object keys in jsonb order).'),
});

export const TimerSummary = model('TimerSummary', summaryFields).description(
  'A timer without its payload (GET /api/v1/timers/{timer_id} has it).',
);

export const TimerList = model('TimerList', {
  timers: Joi.array().items(TimerSummary).description('Newest first.'),
  limit: integer(),
  offset: integer(),
});

const summaryOf = (t: TimerRow) => ({
  timer_id: t.timer_id,
  state: t.state,
  fire_at: t.fire_at,
  labels: t.labels,
  created_at: t.created_at,
  fired_at: t.fired_at,
  cancelled_at: t.cancelled_at,
  // numeric(16, 3): exact in a JSON number.
  fire_delay_seconds: t.fire_delay_seconds === null ? null : Number(t.fire_delay_seconds),
});

export const presentTimer = (t: TimerRow) => ({ ...summaryOf(t), payload: t.payload });
export const presentTimerSummary = summaryOf;
