import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { serviceUsageCsv, usageReportCsv } from '../../domain/usage-csv.ts';
import { resolvePeriod, USAGE_PRESETS } from '../../domain/usage-report.ts';
import { findReseller } from '../../store/repos/resellers.ts';
import { usageByService, usageReport } from '../../store/usage-report.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { InputId, isUuid, StringEnum } from '../schemas/common.ts';
import { UsageReportPayload } from '../schemas/usage.ts';
import { operatorRoute } from './operator-route.ts';

const UsageQuery = Type.Object({
  from: Type.Optional(
    Type.String({
      maxLength: 64,
      description:
        'Start, ISO 8601 (2026-01-01 or 2026-01-01T00:00:00Z), included; with `to`, unless `period` is given',
    }),
  ),
  to: Type.Optional(Type.String({ maxLength: 64, description: 'End, ISO 8601, excluded; with `from`' })),
  period: Type.Optional(
    StringEnum(USAGE_PRESETS, {
      description:
        'Instead of `from` and `to` (both: 400 `validation_failed`): `this_month` is the current calendar month in UTC (from its first day to the first of the next), `last_month` the one before',
    }),
  ),
  reseller_id: Type.Optional(InputId('Only this reseller')),
  per: Type.Optional(
    StringEnum(['reseller', 'service'], {
      description:
        '`reseller` (the default): one line per reseller and product. `service`: the per-service CSV, one line per service, product and resource (with `Accept: text/csv` only; as JSON it is 400 `validation_failed`)',
    }),
  ),
});

/** Whether the client asked for CSV (`Accept: text/csv`). */
function wantsCsv(request: FastifyRequest): boolean {
  return /(^|,)\s*text\/csv\s*(;|,|$)/i.test(request.headers.accept ?? '');
}

/**
 * `GET OPS/usage`: the usage report for invoicing (docs/usage.md), as JSON or CSV
 * (docs/design/contract.md#operator-api).
 */
export function registerOperatorUsageRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  const options = operatorRoute({
    operationId: 'usageReport',
    tags: ['Operator usage'],
    summary: 'Usage for invoicing',
    description:
      'Per reseller and product: service-hours and cpu-, ram-GB-, hdd-GB-, ip- and backup-GB-hours in [from, to), exact to the second, suspended time apart (`suspended_*`), and GB of traffic in and out (`traffic_in_gb`, `traffic_out_gb`) on the UTC days that begin in the period, and `totals`, each figure summed over the lines. The period is `from` and `to`, or `period` (`this_month`, `last_month`: calendar months in UTC). With `Accept: text/csv`, the same lines as CSV (RFC 4180), each with the period (no totals line: every line is a reseller and product). With `per=service` and `Accept: text/csv`, one line per service, product and resource (`resource` names the figure, `quantity` its share, `unit`), with the reseller’s `external_billing_id`; the quantities of a reseller’s product add up to exactly its figure in the report. docs/usage.md says how it is counted.',
    querystring: UsageQuery,
    successMedia: {
      'text/csv': {
        type: 'string',
        description:
          'A header line, then one line per reseller and product (`per=service`: per service, product and resource)',
      },
    },
    response: { 200: UsageReportPayload },
  });
  // The CSV goes out as it is; JSON answers go into the envelope.
  const onSend = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: Error | null, value?: unknown) => void,
  ) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/csv')) done(null, payload);
    else options.onSend(request, reply, payload, done);
  };

  app.get(`${OPS}/usage`, { ...options, onSend }, async (request, reply) => {
    const { reseller_id } = request.query;
    const perService = request.query.per === 'service';
    const csv = wantsCsv(request);
    if (perService && !csv) {
      throw new ApiError('validation_failed', 'per=service is given as CSV only: ask with Accept: text/csv');
    }
    const now = ctx.clock.now();
    const period = resolvePeriod(request.query, now);
    let resellerId: string | undefined;
    if (reseller_id !== undefined) {
      const reseller = isUuid(reseller_id) ? await findReseller(db, reseller_id.toLowerCase()) : undefined;
      if (!reseller) throw new ApiError('reseller_not_found', 'Reseller not found');
      resellerId = reseller.id;
    }
    if (csv) {
      const text = perService
        ? serviceUsageCsv(await usageByService(db, { ...period, resellerId }, now))
        : usageReportCsv(await usageReport(db, { ...period, resellerId }, now));
      // Sent as text, past the route's JSON serializer (which is for the report object).
      reply.type('text/csv; charset=utf-8').serializer((value: unknown) => String(value));
      return text as unknown as Static<typeof UsageReportPayload>;
    }
    const report = await usageReport(db, { ...period, resellerId }, now);
    return { ...report, lines: [...report.lines] };
  });
}
