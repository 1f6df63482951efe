import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ApiError } from '../../src/domain/errors.ts';
import {
  DAYS,
  nextRunAt,
  parseBsDays,
  parseBsTime,
  scheduleKey,
  slotAfter,
  slotsBetween,
} from '../../src/domain/schedules.ts';

const at = (s: string) => Date.parse(s);
const next = (now: string, time: string, days: string) =>
  new Date(nextRunAt(parseBsTime(time), parseBsDays(days), at(now))).toISOString();

describe('nextRunAt', () => {
  // 2026-11-23 is a Monday.
  const table: [string, string, string, string][] = [
    ['2026-11-23T09:00:00Z', '10:00', 'mon', '2026-11-23T10:00:00.000Z'],
    ['2026-11-23T10:00:00Z', '10:00', 'mon', '2026-11-23T10:00:00.000Z'],
    ['2026-11-23T10:00:30Z', '10:00', 'mon', '2026-11-23T10:00:00.000Z'], // the current minute counts
    ['2026-11-23T10:01:00Z', '10:00', 'mon', '2026-11-30T10:00:00.000Z'],
    ['2026-11-23T10:01:00Z', '10:00', 'mon,tue', '2026-11-24T10:00:00.000Z'],
    ['2026-11-28T23:59:00Z', '00:00', 'mon', '2026-11-30T00:00:00.000Z'], // sat -> mon, wrapping the week
    ['2026-11-28T23:59:59Z', '23:59', 'sat', '2026-11-28T23:59:00.000Z'],
    ['2026-11-29T00:00:00Z', '23:59', 'sat', '2026-12-05T23:59:00.000Z'],
    ['2026-11-23T12:00:00Z', '03:30', 'sun', '2026-11-29T03:30:00.000Z'],
    ['2026-11-23T12:00:00Z', '03:30', 'mon,tue,wed,thu,fri,sat,sun', '2026-11-24T03:30:00.000Z'],
    ['2026-12-31T23:30:00Z', '00:15', 'fri', '2027-01-01T00:15:00.000Z'], // year wrap (2027-01-01 is a Friday)
  ];
  for (const [now, time, days, expected] of table) {
    test(`${now} ${time} ${days} -> ${expected}`, () => assert.equal(next(now, time, days), expected));
  }
  test('slotAfter never returns the same slot', () => {
    const s = nextRunAt(parseBsTime('10:00'), ['mon'], at('2026-11-23T10:00:00Z'));
    assert.equal(
      new Date(slotAfter(parseBsTime('10:00'), ['mon'], s)).toISOString(),
      '2026-11-30T10:00:00.000Z',
    );
  });
});

const hh = fc.integer({ min: 0, max: 23 }).map((n) => String(n).padStart(2, '0'));
const mm = fc.integer({ min: 0, max: 59 }).map((n) => String(n).padStart(2, '0'));
const daySet = fc.uniqueArray(fc.constantFrom(...DAYS), { minLength: 1, maxLength: 7 });

function rejects(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (err) {
    return err instanceof ApiError && err.code === 'validation_failed' && err.status === 400;
  }
}

describe('BsTime and BSDays validation (property-based)', () => {
  test('every valid HH:MM and day set is accepted, and nextRunAt lands on it within a week', () => {
    fc.assert(
      fc.property(
        hh,
        mm,
        daySet,
        fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
        (h, m, days, now) => {
          const time = parseBsTime(`${h}:${m}`);
          const parsed = parseBsDays(days.join(','));
          assert.deepEqual(parsed, days);
          const slot = nextRunAt(time, parsed, now);
          const d = new Date(slot);
          assert.ok(slot >= Math.floor(now / 60_000) * 60_000);
          assert.ok(slot - now < 7 * 86_400_000 + 60_000);
          assert.equal(d.getUTCHours(), Number(h));
          assert.equal(d.getUTCMinutes(), Number(m));
          assert.equal(d.getUTCSeconds(), 0);
          assert.ok(parsed.includes(DAYS[d.getUTCDay()]!));
        },
      ),
    );
  });

  test('invalid times are rejected with 400 validation_failed', () => {
    const invalid = fc.oneof(
      fc.integer({ min: 24, max: 99 }).map((h) => `${h}:00`),
      fc.integer({ min: 60, max: 99 }).map((m) => `12:${m}`),
      fc.integer({ min: 0, max: 9 }).map((h) => `${h}:00`),
      fc.tuple(hh, mm).map(([h, m]) => ` ${h}:${m}`),
      fc.tuple(hh, mm).map(([h, m]) => `${h}:${m}:00`),
      fc.tuple(hh, mm).map(([h, m]) => `${h}${m}`),
      fc.tuple(hh, mm).map(([h, m]) => `${h}.${m}`),
      fc.string().filter((s) => !/^([01]\d|2[0-3]):[0-5]\d$/.test(s)),
    );
    fc.assert(fc.property(invalid, (s) => rejects(() => parseBsTime(s))));
  });

  test('invalid day lists are rejected with 400 validation_failed', () => {
    const invalid = fc.oneof(
      fc.constant(''),
      daySet.map((d) => `${d.join(',')},`),
      daySet.map((d) => `,${d.join(',')}`),
      daySet.map((d) => d.join(', ')).filter((s) => s.includes(' ')),
      daySet.map((d) => d.join(',').toUpperCase()),
      daySet.map((d) => [...d, d[0]].join(',')),
      daySet.map((d) => d.join(';')).filter((s) => s.includes(';')),
      fc.constantFrom('monday', 'mo', 'Mon', 'mon,,tue', 'mon tue'),
    );
    fc.assert(fc.property(invalid, (s) => rejects(() => parseBsDays(s))));
  });
});

describe('the forms the contract names', () => {
  for (const bad of ['7:00', '24:00', '12:60', ' 12:00', '12:00 ', '12:00:00', '', '12-00', '１２:００']) {
    test(`BsTime ${JSON.stringify(bad)} is rejected, naming BsTime`, () => {
      assert.throws(
        () => parseBsTime(bad),
        (err) => err instanceof ApiError && err.code === 'validation_failed' && /BsTime/.test(err.message),
      );
    });
  }
  for (const bad of ['', 'mon,', ',mon', 'Mon', 'MON', 'mon,mon', 'mon, tue', 'monday', 'mon,,tue', ' mon']) {
    test(`BSDays ${JSON.stringify(bad)} is rejected, naming BSDays`, () => {
      assert.throws(
        () => parseBsDays(bad),
        (err) => err instanceof ApiError && err.code === 'validation_failed' && /BSDays/.test(err.message),
      );
    });
  }
  test('the edges of the day are accepted', () => {
    assert.deepEqual(parseBsTime('00:00'), { hour: 0, minute: 0 });
    assert.deepEqual(parseBsTime('23:59'), { hour: 23, minute: 59 });
    assert.deepEqual(parseBsDays('sun,sat'), ['sun', 'sat']);
  });
});

describe('slotsBetween and scheduleKey', () => {
  test('lists the slots of a range in order, bounded', () => {
    const time = parseBsTime('10:00');
    const list = (from: string, to: string, limit = 100) =>
      slotsBetween(time, ['mon', 'wed'], at(from), at(to), limit).map((s) => new Date(s).toISOString());
    assert.deepEqual(list('2026-11-23T10:00:00Z', '2026-12-01T00:00:00Z'), [
      '2026-11-23T10:00:00.000Z',
      '2026-11-25T10:00:00.000Z',
      '2026-11-30T10:00:00.000Z',
    ]);
    assert.deepEqual(list('2026-11-23T10:00:01Z', '2026-11-30T10:00:00Z'), ['2026-11-25T10:00:00.000Z']);
    assert.equal(list('2026-11-23T10:00:00Z', '2027-11-23T10:00:00Z', 2).length, 2);
    assert.deepEqual(list('2026-11-23T11:00:00Z', '2026-11-25T09:59:59Z'), []);
  });

  test('every slot of a range, and only those (property)', () => {
    fc.assert(
      fc.property(
        hh,
        mm,
        daySet,
        fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
        fc.integer({ min: 0, max: 30 * 86_400_000 }),
        (h, m, days, from, span) => {
          const time = parseBsTime(`${h}:${m}`);
          const slots = slotsBetween(time, days, from, from + span, 1000);
          // Brute force: every minute start in the range that is on a listed day at HH:MM.
          const expected: number[] = [];
          const firstDay = Math.floor(from / 86_400_000) * 86_400_000;
          for (let d = firstDay; d < from + span; d += 86_400_000) {
            const s = d + (Number(h) * 60 + Number(m)) * 60_000;
            if (s >= from && s < from + span && days.includes(DAYS[new Date(d).getUTCDay()]!)) {
              expected.push(s);
            }
          }
          assert.deepEqual(slots, expected);
          for (let i = 1; i < slots.length; i++) assert.equal(slotAfter(time, days, slots[i - 1]!), slots[i]);
        },
      ),
    );
  });

  test('the key of a schedule ignores the order of its days', () => {
    const key = (t: string, d: string) => scheduleKey(parseBsTime(t), parseBsDays(d));
    assert.equal(key('03:30', 'fri,tue'), key('03:30', 'tue,fri'));
    assert.notEqual(key('03:30', 'tue'), key('03:30', 'tue,fri'));
    assert.notEqual(key('03:31', 'tue'), key('03:30', 'tue'));
  });
});
