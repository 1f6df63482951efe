import assert from 'node:assert/strict';
import { test } from 'node:test';
import { billingIdProblem, checkBillingId } from '../../src/domain/billing-id.ts';
import { apportion, decimalText } from '../../src/domain/usage-by-service.ts';
import { hoursOf, microOf, presetPeriod, resolvePeriod, usageTotals } from '../../src/domain/usage-report.ts';

test('apportion: shares add up to the sum rounded once, each within a millionth of its own value', () => {
  const hours = { num: 5n, den: 18n };
  // Three services of 1 ms x unit each: 0.000000278 h each, 0.000000833 h together (rounds to 1 millionth).
  assert.deepEqual(apportion([1n, 1n, 1n], hours), [1n, 0n, 0n]);
  // Seven of 1999 ms: each rounds to 555 or 556 millionths.
  const parts = Array.from({ length: 7 }, () => 1999n);
  const shares = apportion(parts, hours);
  assert.equal(
    shares.reduce((a, b) => a + b, 0n),
    microOf(hoursOf(7n * 1999n)),
  );
  for (const s of shares) assert.ok(s === 555n || s === 556n);
  // The largest remainders get the extra millionths first.
  assert.deepEqual(apportion([1000n, 1700n], { num: 1n, den: 1000n }), [1n, 2n]);
  assert.deepEqual(apportion([1499n, 1499n], { num: 1n, den: 1000n }), [2n, 1n]);
  assert.deepEqual(apportion([], hours), []);
  assert.deepEqual(apportion([0n, 36n], hours), [0n, 10n]);
});

test('decimal text: exact, without trailing zeros', () => {
  assert.equal(decimalText(0n), '0');
  assert.equal(decimalText(2_000_000n), '2');
  assert.equal(decimalText(12_500_000n), '12.5');
  assert.equal(decimalText(278n), '0.000278');
  assert.equal(decimalText(123_456_789_012_345_678n), '123456789012.345678');
});

test('presets: calendar months in UTC, across a year; period and from/to exclude each other', () => {
  const iso = (p: { from: number; to: number }) => [
    new Date(p.from).toISOString(),
    new Date(p.to).toISOString(),
  ];
  assert.deepEqual(iso(presetPeriod('last_month', Date.UTC(2031, 0, 1))), [
    '2030-12-01T00:00:00.000Z',
    '2031-01-01T00:00:00.000Z',
  ]);
  assert.deepEqual(iso(presetPeriod('this_month', Date.UTC(2030, 11, 31, 23, 59, 59, 999))), [
    '2030-12-01T00:00:00.000Z',
    '2031-01-01T00:00:00.000Z',
  ]);
  assert.deepEqual(iso(presetPeriod('this_month', Date.UTC(2032, 1, 29, 12))), [
    '2032-02-01T00:00:00.000Z',
    '2032-03-01T00:00:00.000Z',
  ]);
  const now = Date.UTC(2031, 5, 15);
  assert.throws(() => resolvePeriod({ period: 'this_month', to: '2031-07-01' }, now), /not both/);
  assert.throws(() => resolvePeriod({ from: '2031-06-01' }, now), /from and to are required/);
  assert.deepEqual(
    resolvePeriod({ from: '2031-06-01', to: '2031-07-01' }, now),
    presetPeriod('this_month', now),
  );
});

test('totals: the lines as shown, added exactly', () => {
  const line = (x: number) => ({
    reseller_id: 'r',
    reseller_name: 'r',
    product_id: 'p',
    product_name: 'p',
    services: 1,
    service_hours: x,
    cpu_hours: x,
    ram_gb_hours: x,
    hdd_gb_hours: x,
    ip_hours: x,
    backup_gb_hours: x,
    suspended_service_hours: 0,
    suspended_cpu_hours: 0,
    suspended_ram_gb_hours: 0,
    suspended_hdd_gb_hours: 0,
    suspended_ip_hours: 0,
    suspended_backup_gb_hours: 0,
    traffic_in_gb: x,
    traffic_out_gb: 0,
  });
  const totals = usageTotals([line(0.1), line(0.2), line(0.000278)]);
  // 0.1 + 0.2 is 0.30000000000000004 in binary; the total is the decimal sum.
  assert.equal(totals.service_hours, 0.300278);
  assert.equal(totals.services, 3);
  assert.equal(usageTotals([]).traffic_in_gb, 0);
});

test('billing ids: printable text of 1 to 100 characters, no space at either end; null clears', () => {
  assert.equal(checkBillingId('CUST-0042 / Ünïcode'), 'CUST-0042 / Ünïcode');
  assert.equal(checkBillingId(null), null);
  for (const [bad, why] of [
    ['', /empty/],
    ['x'.repeat(101), /at most 100/],
    ['a\u0000b', /printable/],
    ['a\u200Bb', /printable/],
    ['\uD800', /printable/],
    [' a', /space/],
  ] as const) {
    assert.match(billingIdProblem(bad) ?? '', why, JSON.stringify(bad));
    assert.throws(
      () => checkBillingId(bad),
      (err: any) => err.code === 'validation_failed',
    );
  }
});
