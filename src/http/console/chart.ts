import { type Html, html } from './html.ts';

/** One series of a bar chart: its name in the legend and the CSS class its segments are drawn with. */
export interface ChartSeries {
  readonly name: string;
  readonly className: string;
}

/** One bar: its label and one value per series (stacked, in the series' order). */
export interface ChartBar {
  readonly label: string;
  readonly values: readonly number[];
}

export interface BarChartOptions {
  /** The element id (the chart's title is `${id}-title`). */
  readonly id: string;
  readonly title: string;
  readonly unit: string;
  readonly series: readonly ChartSeries[];
  readonly bars: readonly ChartBar[];
}

const WIDTH = 640;
const BAR_SPACE = 520;
const ROW = 40;
const BAR_HEIGHT = 16;
const LEGEND = 28;

/** A figure as the chart writes it: at most two decimals, no trailing zeros. */
function figure(n: number): string {
  return String(Math.round(n * 100) / 100);
}

/**
 * A horizontal stacked bar chart as inline SVG markup: no script and no library (the console's
 * Content-Security-Policy allows neither inline script nor anything from elsewhere), coloured by
 * CSS classes (no inline style either). Each bar has its label above it and its total after it;
 * the SVG has a title and a description that state every figure, for screen readers, and the
 * page shows the same figures in a table.
 */
export function barChart(o: BarChartOptions): Html {
  if (o.bars.length === 0) return html``;
  const totals = o.bars.map((b) => b.values.reduce((a, v) => a + Math.max(0, v), 0));
  const most = Math.max(...totals);
  const scale = most > 0 ? BAR_SPACE / most : 0;
  const height = LEGEND + o.bars.length * ROW;
  const desc = o.bars
    .map(
      (b, i) =>
        `${b.label}: ${figure(totals[i] ?? 0)} ${o.unit} (${o.series.map((s, j) => `${s.name} ${figure(b.values[j] ?? 0)}`).join(', ')})`,
    )
    .join('; ');
  const legend = o.series.map(
    (s, j) => html`<g transform="translate(${j * 180},0)">
  <rect class="${s.className}" x="0" y="4" width="12" height="12"></rect>
  <text class="chart-text" x="18" y="15">${s.name}</text>
</g>`,
  );
  const rows = o.bars.map((b, i) => {
    const y = LEGEND + i * ROW;
    let x = 0;
    const segments = o.series.map((s, j) => {
      const w = Math.max(0, b.values[j] ?? 0) * scale;
      const segment = html`<rect class="${s.className}" x="${x.toFixed(1)}" y="${y + 18}" width="${w.toFixed(1)}" height="${BAR_HEIGHT}"></rect>`;
      x += w;
      return segment;
    });
    return html`<g>
  <text class="chart-text" x="0" y="${y + 13}">${b.label}</text>
  ${segments}
  <text class="chart-text chart-figure" x="${(x + 6).toFixed(1)}" y="${y + 31}">${figure(totals[i] ?? 0)}</text>
</g>`;
  });
  return html`<svg id="${o.id}" class="chart" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img" aria-labelledby="${o.id}-title ${o.id}-desc" xmlns="http://www.w3.org/2000/svg">
<title id="${o.id}-title">${o.title}</title>
<desc id="${o.id}-desc">${desc}</desc>
${legend}
${rows}
</svg>`;
}
