/** Usage payloads: a reseller's quota and use (reseller and operator APIs), the usage report. */
import { Type } from 'typebox';
import { QUOTA_RESOURCES } from '../../domain/quotas.ts';
import { USAGE_FIGURE_FIELDS, USAGE_LINE_FIELDS } from '../../domain/usage-report.ts';
import { Nullable } from './common.ts';

const Count = Type.Integer({ minimum: 0 });

const TEXT_FIELDS = new Set(['reseller_id', 'reseller_name', 'product_id', 'product_name']);

/**
 * The reseller's quota (null: unlimited) and use, per resource
 * (docs/design/contract.md#quotas-and-usage).
 */
export const UsagePayload = Type.Object({
  quota: Type.Object(Object.fromEntries(QUOTA_RESOURCES.map((r) => [r, Nullable(Count)]))),
  use: Type.Object(Object.fromEntries(QUOTA_RESOURCES.map((r) => [r, Count]))),
});

const UsageLinePayload = Type.Object(
  Object.fromEntries(
    USAGE_LINE_FIELDS.map((f) => [
      f,
      TEXT_FIELDS.has(f)
        ? Type.String()
        : f === 'services'
          ? Type.Integer({ minimum: 0 })
          : Type.Number({ minimum: 0 }),
    ]),
  ),
  { title: 'UsageLine' },
);

/** The usage report: GET OPS/usage as JSON (the console's usage page reads it). */
export const UsageReportPayload = Type.Object(
  {
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
    until: Type.String({
      format: 'date-time',
      description: 'Intervals still open are counted up to this time',
    }),
    lines: Type.Array(UsageLinePayload, { description: 'One per reseller and product' }),
    totals: Type.Object(
      Object.fromEntries(
        USAGE_FIGURE_FIELDS.map((f) => [
          f,
          f === 'services' ? Type.Integer({ minimum: 0 }) : Type.Number({ minimum: 0 }),
        ]),
      ),
      {
        title: 'UsageTotals',
        description:
          'Each figure of the lines summed over the lines, exactly as they are given (`services` counts a service once per product it had)',
      },
    ),
  },
  { title: 'UsageReport' },
);
