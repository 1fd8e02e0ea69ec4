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
