import { ApiError } from './errors.ts';

/** Day abbreviations of BSDays, in the order JavaScript's getUTCDay() counts them (sunday = 0). */
export const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Day = (typeof DAYS)[number];

/** A schedule can have at most this many entries per service. */
export const MAX_SCHEDULES_PER_SERVICE = 10;

const MINUTE = 60_000;
const DAY_MS = 24 * 60 * MINUTE;

export interface TimeOfDay {
  readonly hour: number;
  readonly minute: number;
}

/** `HH:MM`, 24-hour, two digits each (docs/design/contract.md#backup-schedules). */
export function parseBsTime(value: string): TimeOfDay {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  if (!m)
    throw new ApiError(
      'validation_failed',
      `BsTime must be a time of day HH:MM (00:00 to 23:59), got "${value}"`,
    );
  return { hour: Number(m[1]), minute: Number(m[2]) };
}

/** A comma-separated, non-empty, duplicate-free list of lower-case days from mon..sun. */
export function parseBsDays(value: string): Day[] {
  const parts = value.split(',');
  const days: Day[] = [];
  for (const p of parts) {
    const day = DAYS.find((d) => d === p);
    if (day === undefined) {
      throw new ApiError(
        'validation_failed',
        `BSDays must be a comma-separated list of mon, tue, wed, thu, fri, sat, sun without spaces, got "${value}"`,
      );
    }
    if (days.includes(day)) throw new ApiError('validation_failed', `BSDays names "${p}" twice`);
    days.push(day);
  }
  return days;
}

/**
 * The first slot (HH:MM:00 UTC on a listed day) at or after the start of the minute `fromMs`
 * is in: a slot in the current minute counts, and runs now.
 */
export function nextRunAt(time: TimeOfDay, days: readonly Day[], fromMs: number): number {
  const minuteStart = Math.floor(fromMs / MINUTE) * MINUTE;
  const midnight = Math.floor(minuteStart / DAY_MS) * DAY_MS;
  for (let d = 0; d <= 7; d++) {
    const dayStart = midnight + d * DAY_MS;
    const slot = dayStart + (time.hour * 60 + time.minute) * MINUTE;
    const weekday = new Date(dayStart).getUTCDay();
    if (slot >= minuteStart && days.some((day) => DAYS.indexOf(day) === weekday)) return slot;
  }
  throw new Error('unreachable: a non-empty day list has a slot within 8 days');
}

/** The slot after `slotMs` (never the same one). */
export function slotAfter(time: TimeOfDay, days: readonly Day[], slotMs: number): number {
  return nextRunAt(time, days, slotMs + MINUTE);
}

/**
 * The slots in [fromMs, toMs), oldest first, at most `limit` of them (a long outage must not
 * make the scheduler enumerate years of slots).
 */
export function slotsBetween(
  time: TimeOfDay,
  days: readonly Day[],
  fromMs: number,
  toMs: number,
  limit: number,
): number[] {
  const slots: number[] = [];
  for (
    let s = nextRunAt(time, days, fromMs);
    s < toMs && slots.length < limit;
    s = slotAfter(time, days, s)
  ) {
    if (s >= fromMs) slots.push(s);
  }
  return slots;
}

/**
 * Two schedules with the same key fire at the same instants: same time, same set of days
 * (in any order). Used to treat a repeated create as already done.
 */
export function scheduleKey(time: TimeOfDay, days: readonly Day[]): string {
  const hhmm = `${String(time.hour).padStart(2, '0')}:${String(time.minute).padStart(2, '0')}`;
  return `${hhmm} ${DAYS.filter((d) => days.includes(d)).join(',')}`;
}
