import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { usageReportCsv } from '../../src/domain/usage-csv.ts';
import {
  hoursOf,
  parseIsoTime,
  parsePeriod,
  type UsageReport,
  usageLine,
} from '../../src/domain/usage-report.ts';

const HOUR = 3_600_000n;

test('hours are exact to the second, also beyond 2^53 milliseconds', () => {
  assert.equal(hoursOf(0n), 0);
  assert.equal(hoursOf(HOUR), 1);
  assert.equal(hoursOf(1000n), 0.000278); // one second
  assert.equal(hoursOf(90n * 60_000n), 1.5);
  // A million services for a year at 512 GB: 1.6e19 ms x GB, over 2^63 even; the fraction survives.
  const big = 4_480_000_000_000n * HOUR + HOUR / 4n;
  assert.equal(hoursOf(big), 4_480_000_000_000.25);
});

test('ISO 8601 times: dates are midnight UTC; a time needs a zone; impossible dates are refused', () => {
  assert.equal(parseIsoTime('2026-03-01'), Date.UTC(2026, 2, 1));
  assert.equal(parseIsoTime('2026-03-01T10:30:00Z'), Date.UTC(2026, 2, 1, 10, 30));
  assert.equal(parseIsoTime('2026-03-01T10:30+02:00'), Date.UTC(2026, 2, 1, 8, 30));
  assert.equal(parseIsoTime('2026-03-01T10:30:00.250Z'), Date.UTC(2026, 2, 1, 10, 30, 0, 250));
  for (const bad of [
    '2026-02-30',
    '2026-13-01',
    '2026-03-01T24:00Z',
    '2026-03-01T10:30',
    '2026-03-01 10:30Z',
    '1 March 2026',
    '',
    '1767225600000',
  ]) {
    assert.equal(parseIsoTime(bad), undefined, bad);
  }
});

test('a period: both times valid, to after from; else validation_failed naming the field', () => {
  assert.deepEqual(parsePeriod('2026-01-01', '2026-02-01'), {
    from: Date.UTC(2026, 0, 1),
    to: Date.UTC(2026, 1, 1),
  });
  const refused = (from: string, to: string, message: RegExp) =>
    assert.throws(
      () => parsePeriod(from, to),
      (err: unknown) =>
        err instanceof ApiError && err.code === 'validation_failed' && message.test(err.message),
    );
  refused('yesterday', '2026-02-01', /^from must be/);
  refused('2026-01-01', '2026-02-31', /^to must be/);
  refused('2026-02-01', '2026-02-01', /to must be after from/);
  refused('2026-02-01', '2026-01-01', /to must be after from/);
});

test('CSV: a header, the period on every line, RFC 4180 quoting, formulas defused', () => {
  const totals = (ms: bigint) => ({
    service: ms,
    cpu: 2n * ms,
    ram: 4n * ms,
    hdd: 40n * ms,
    ip: ms,
    backup: 10n * ms,
  });
  const report: Omit<UsageReport, 'totals'> = {
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-02-01T00:00:00.000Z',
    until: '2026-02-01T00:00:00.000Z',
    lines: [
      usageLine(
        { resellerId: 'r1', resellerName: 'acme', productId: 'p1', productName: 'VPS "Starter", 1' },
        { running: totals(2n * HOUR), suspended: totals(HOUR / 2n), services: 1 },
        { inBytes: 1_500_000_000, outBytes: 250_000_499 },
      ),
      usageLine(
        { resellerId: 'r2', resellerName: 'beta', productId: 'p2', productName: '=HYPERLINK("x")' },
        { running: totals(0n), suspended: totals(0n), services: 0 },
      ),
    ],
  };
  const csv = usageReportCsv(report);
  const lines = csv.split('\r\n');
  assert.equal(lines.at(-1), '', 'ends with CRLF');
  assert.equal(
    lines[0],
    'from,to,reseller_id,reseller_name,product_id,product_name,services,service_hours,cpu_hours,ram_gb_hours,' +
      'hdd_gb_hours,ip_hours,backup_gb_hours,suspended_service_hours,suspended_cpu_hours,' +
      'suspended_ram_gb_hours,suspended_hdd_gb_hours,suspended_ip_hours,suspended_backup_gb_hours,' +
      'traffic_in_gb,traffic_out_gb',
  );
  assert.equal(
    lines[1],
    '2026-01-01T00:00:00.000Z,2026-02-01T00:00:00.000Z,r1,acme,p1,"VPS ""Starter"", 1",1,2,4,8,80,2,20,0.5,1,2,20,0.5,5,1.5,0.25',
  );
  assert.match(lines[2]!, /,r2,beta,p2,"'=HYPERLINK\(""x""\)",0,0,/);
  assert.match(lines[2]!, /,0,0$/, 'no traffic: zero GB in and out');
  assert.equal(lines.length, 4);
});
