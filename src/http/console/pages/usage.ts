import type { Static } from 'typebox';
import type { Clock } from '../../../domain/clock.ts';
import { presetPeriod, type UsageLine, type UsagePreset } from '../../../domain/usage-report.ts';
import { CONSOLE } from '../../base-path.ts';
import type { UsageReportPayload } from '../../schemas/usage.ts';
import { barChart } from '../chart.ts';
import { table, time } from '../components.ts';
import type { ConsoleRouter } from '../console-router.ts';
import { type Html, html } from '../html.ts';
import { OpsRefusal } from '../ops-client.ts';

/** The report as the operator API answers it; its lines are the domain's lines, field for field. */
type Report = Omit<Static<typeof UsageReportPayload>, 'lines'> & { readonly lines: readonly UsageLine[] };

/** The columns of the table after reseller and product: the report's figures, in its order. */
const FIGURES = [
  ['services', 'Services'],
  ['service_hours', 'Service hours'],
  ['cpu_hours', 'vCore hours'],
  ['ram_gb_hours', 'RAM GB hours'],
  ['hdd_gb_hours', 'Disk GB hours'],
  ['ip_hours', 'IP hours'],
  ['backup_gb_hours', 'Backup GB hours'],
  ['suspended_service_hours', 'Suspended service hours'],
  ['suspended_cpu_hours', 'Suspended vCore hours'],
  ['suspended_ram_gb_hours', 'Suspended RAM GB hours'],
  ['suspended_hdd_gb_hours', 'Suspended disk GB hours'],
  ['suspended_ip_hours', 'Suspended IP hours'],
  ['suspended_backup_gb_hours', 'Suspended backup GB hours'],
  ['traffic_in_gb', 'Traffic in GB'],
  ['traffic_out_gb', 'Traffic out GB'],
] as const satisfies readonly (readonly [keyof UsageLine, string])[];

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The preset periods the page links to: calendar months in UTC, as the API's `period` names them. */
const PRESETS = [
  ['this_month', 'This month'],
  ['last_month', 'Last month'],
] as const satisfies readonly (readonly [UsagePreset, string])[];

/** The default period: the current month so far (UTC), today included (the end is excluded). */
function currentMonth(now: number): { from: string; to: string } {
  const d = new Date(now);
  return {
    from: day(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)),
    to: day(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)),
  };
}

/** Links that fill the form's range with a preset's dates (the end, the first of the next month, excluded). */
function presetLinks(now: number): Html {
  return html`<nav aria-label="Preset periods"><ul class="presets">${PRESETS.map(([preset, label]) => {
    const p = presetPeriod(preset, now);
    const query = new URLSearchParams({ from: day(p.from), to: day(p.to) }).toString();
    return html`<li><a href="${CONSOLE}/usage?${query}">${label}</a></li>`;
  })}</ul></nav>`;
}

function periodForm(from: string, to: string): Html {
  return html`<form method="get" action="${CONSOLE}/usage" class="filters">
  <div><label for="usage-from">From (included, UTC)</label>
  <input id="usage-from" name="from" type="date" required value="${from}"></div>
  <div><label for="usage-to">To (not included, UTC)</label>
  <input id="usage-to" name="to" type="date" required value="${to}"></div>
  <div><button type="submit">Show usage</button></div>
</form>`;
}

/** Service-hours per reseller (all its products), running and suspended. */
function chartOf(report: Report): Html {
  const per = new Map<string, { label: string; running: number; suspended: number }>();
  for (const l of report.lines) {
    const bar = per.get(l.reseller_id) ?? { label: l.reseller_name, running: 0, suspended: 0 };
    bar.running += l.service_hours;
    bar.suspended += l.suspended_service_hours;
    per.set(l.reseller_id, bar);
  }
  return barChart({
    id: 'usage-chart',
    title: 'Service-hours per reseller',
    unit: 'service-hours',
    series: [
      { name: 'Running', className: 'chart-a' },
      { name: 'Suspended', className: 'chart-b' },
    ],
    bars: [...per.values()].map((b) => ({ label: b.label, values: [b.running, b.suspended] })),
  });
}

function reportBody(report: Report, from: string, to: string): Html {
  const csv = new URLSearchParams({ from, to }).toString();
  const perService = new URLSearchParams({ from, to, per: 'service' }).toString();
  return html`<p>From ${time(report.from)} to ${time(report.to)}; servers still running are counted up to ${time(report.until)}.</p>
<p><a href="${CONSOLE}/usage.csv?${csv}" download>Download CSV</a> ·
<a href="${CONSOLE}/usage.csv?${perService}" download>Per-service CSV (one line per service and resource)</a></p>
${report.lines.length > 0 ? html`<figure class="chart-figure-box">${chartOf(report)}</figure>` : ''}
${table(
  'Usage per reseller and product',
  ['Reseller', 'Product', ...FIGURES.map(([, label]) => label)],
  report.lines.map(
    (
      l,
    ) => html`<tr><td><a href="${CONSOLE}/resellers/${l.reseller_id}">${l.reseller_name}</a></td><td>${l.product_name}</td>
${FIGURES.map(([key]) => html`<td class="num">${l[key]}</td>`)}</tr>`,
  ),
  'No server ran in this period.',
  html`<tr class="totals"><th scope="row" colspan="2">Total</th>
${FIGURES.map(([key]) => html`<td class="num">${report.totals[key]}</td>`)}</tr>`,
)}`;
}

/**
 * `CONSOLE/usage`: the usage report of a period (the current month so far unless chosen), as a
 * table, a chart of service-hours per reseller, and a CSV download (`CONSOLE/usage.csv`, the
 * operator API's CSV as it is, as an attachment).
 */
export function registerUsagePages(router: ConsoleRouter, clock: Clock): void {
  router.page('/usage', async (call) => {
    const period = currentMonth(clock.now());
    const from = call.query('from') ?? period.from;
    const to = call.query('to') ?? period.to;
    let body: Html;
    try {
      body = reportBody(await call.ops.get<Report>('usage', { from, to }), from, to);
    } catch (err) {
      // A bad period: the form again, with the API's reason.
      if (!(err instanceof OpsRefusal) || err.status !== 400) throw err;
      body = html`<p class="error" role="alert">${err.message}</p>`;
    }
    return call.render({
      title: 'Usage',
      section: 'usage',
      body: html`${presetLinks(clock.now())}${periodForm(from, to)}${body}`,
    });
  });

  router.page('/usage.csv', async (call) => {
    const from = call.query('from') ?? '';
    const to = call.query('to') ?? '';
    const perService = call.query('per') === 'service';
    // The API checks the period first: what reaches the file name is an ISO 8601 time.
    const csv = await call.ops.text(
      'usage',
      { from, to, ...(perService ? { per: 'service' } : {}) },
      'text/csv',
    );
    const name = `usage-${perService ? 'per-service-' : ''}${from}-${to}.csv`;
    return call.reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${name}"`)
      .send(csv);
  });
}
