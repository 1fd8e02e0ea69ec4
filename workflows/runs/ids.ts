/**
 * ULIDs made inside workflow code: time from the workflow clock and randomness from the
 * workflow's seeded Math.random, so a replay makes the same ids (what keys an idempotent
 * state-change activity). Pure: no crypto, no I/O.
 */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function workflowUlid(
  nowMs: number = Date.now(),
  random: () => number = Math.random,
): string {
  let time = '';
  let rest = Math.floor(nowMs);
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[rest % 32]! + time;
    rest = Math.floor(rest / 32);
  }
  let tail = '';
  for (let i = 0; i < 16; i++) tail += CROCKFORD[Math.floor(random() * 32)]!;
  return time + tail;
}

/** The time part of a ULID, in ms since the epoch. */
export function ulidTimeMs(id: string): number {
  let ms = 0;
  for (let i = 0; i < 10; i++) ms = ms * 32 + CROCKFORD.indexOf(id[i]!);
  return ms;
}

/**
 * A workflow ULID that sorts after `previous`: its time is at least one ms past previous's.
 * Two state changes made in one workflow task share the workflow clock, and their events are
 * listed by id, so the ids of one run's changes must rise in the order they were made.
 */
export function nextWorkflowUlid(
  previous: string | null,
  nowMs: number = Date.now(),
  random: () => number = Math.random,
): string {
  const after = previous === null ? -Infinity : ulidTimeMs(previous) + 1;
  return workflowUlid(Math.max(nowMs, after), random);
}
