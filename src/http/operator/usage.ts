import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { usageReportCsv } from '../../domain/usage-csv.ts';
import { parsePeriod } from '../../domain/usage-report.ts';
import { findReseller } from '../../store/repos/resellers.ts';
import { usageReport } from '../../store/usage-report.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { InputId, isUuid } from '../schemas/common.ts';
import { UsageReportPayload } from '../schemas/usage.ts';
import { operatorRoute } from './operator-route.ts';

const UsageQuery = Type.Object({
  from: Type.String({
    maxLength: 64,
    description: 'Start, ISO 8601 (2026-01-01 or 2026-01-01T00:00:00Z), included',
  }),
  to: Type.String({ maxLength: 64, description: 'End, ISO 8601, excluded' }),
  reseller_id: Type.Optional(InputId('Only this reseller')),
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
      'Per reseller and product: service-hours and cpu-, ram-GB-, hdd-GB-, ip- and backup-GB-hours in [from, to), exact to the second, suspended time apart (`suspended_*`), and GB of traffic in and out (`traffic_in_gb`, `traffic_out_gb`) on the UTC days that begin in the period. With `Accept: text/csv`, the same lines as CSV (RFC 4180), each with the period. docs/usage.md says how it is counted.',
    querystring: UsageQuery,
    successMedia: {
      'text/csv': { type: 'string', description: 'A header line, then one line per reseller and product' },
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
    const { from, to, reseller_id } = request.query;
    const period = parsePeriod(from, to);
    let resellerId: string | undefined;
    if (reseller_id !== undefined) {
      const reseller = isUuid(reseller_id) ? await findReseller(db, reseller_id.toLowerCase()) : undefined;
      if (!reseller) throw new ApiError('reseller_not_found', 'Reseller not found');
      resellerId = reseller.id;
    }
    const report = await usageReport(db, { ...period, resellerId }, ctx.clock.now());
    if (wantsCsv(request)) {
      // Sent as text, past the route's JSON serializer (which is for the report object).
      reply.type('text/csv; charset=utf-8').serializer((text: unknown) => String(text));
      return usageReportCsv(report) as unknown as Static<typeof UsageReportPayload>;
    }
    return { ...report, lines: [...report.lines] };
  });
}
