import type { Static } from 'typebox';
import { CONSOLE } from '../base-path.ts';
import type { HostPayload, IpPoolPayload } from '../schemas/operator.ts';
import { type Html, html } from './html.ts';

/** The shapes the operator API answers with, as the console reads them. */
export type Host = Static<typeof HostPayload>;
export type IpPool = Static<typeof IpPoolPayload>;

/** A list page of the operator API. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly next_cursor: string | null;
}

/**
 * A time as the API gives it (ISO, UTC): readable without script, and shown in the operator's own
 * zone by console.js, which rewrites every `time[data-local]`.
 */
export function time(iso: string | null | undefined): Html {
  if (!iso) return html`<span class="none">—</span>`;
  const utc = `${iso.slice(0, 19).replace('T', ' ')} UTC`;
  return html`<time datetime="${iso}" data-local>${utc}</time>`;
}

/** A status as a labelled badge (the text says it; colour only helps). */
export function badge(status: string): Html {
  return html`<span class="badge badge-${status}">${status}</span>`;
}

/** A use bar: how much of `capacity` is `used`, with the numbers in words for screen readers. */
export function useBar(label: string, used: number, capacity: number, unit: string): Html {
  const share = capacity > 0 ? Math.min(1, Math.max(0, used / capacity)) : 1;
  const percent = Math.round(share * 100);
  const level = percent >= 90 ? 'high' : percent >= 70 ? 'mid' : 'low';
  return html`<div class="use">
  <span class="use-label">${label}</span>
  <meter min="0" max="${capacity}" value="${used}" low="${capacity * 0.7}" high="${capacity * 0.9}" optimum="0" aria-label="${label} used">${percent}%</meter>
  <span class="use-figures use-${level}">${used} / ${capacity} ${unit} (${percent}%)</span>
</div>`;
}

/** The link to a page's next page, keeping its filters; nothing on the last page. */
export function nextPageLink(
  path: string,
  filters: Record<string, string | undefined>,
  cursor: string | null,
): Html {
  if (!cursor) return html``;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v) params.set(k, v);
  params.set('cursor', cursor);
  return html`<nav class="pager" aria-label="Pages"><a href="${CONSOLE}${path}?${params.toString()}" rel="next">Next page →</a></nav>`;
}

/** A table, or a sentence when there is nothing to list. */
export function table(
  caption: string,
  head: readonly string[],
  rows: readonly Html[],
  empty: string,
  foot?: Html,
): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="table-wrap"><table>
<caption>${caption}</caption>
<thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows}</tbody>${
    foot === undefined
      ? ''
      : html`
<tfoot>${foot}</tfoot>`
  }
</table></div>`;
}

/** Where a failed job that was retried already stands instead of its Retry button: the job its retry queued. */
export function retriedAs(jobId: string): Html {
  return html`<span class="retried">Retried as job <span class="mono id">${jobId}</span></span>`;
}

/**
 * Where a queued job that began stands instead of its Cancel button (its `cancellable` is false):
 * an attempt of it began, and only its next run finishes or undoes what that attempt changed.
 */
export function beganNote(): Html {
  return html`<span class="none" title="An attempt of this job began; its next run finishes or undoes what that attempt changed">began; cannot be cancelled</span>`;
}

/**
 * The links to a page's previous and next pages, keeping its filters; each only where there is
 * such a page (`prev` / `next`: the list's cursors).
 */
export function pagerLinks(
  path: string,
  filters: Record<string, string | undefined>,
  prev: string | null,
  next: string | null,
): Html {
  if (!prev && !next) return html``;
  const to = (cursor: string) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) params.set(k, v);
    params.set('cursor', cursor);
    return `${CONSOLE}${path}?${params.toString()}`;
  };
  return html`<nav class="pager" aria-label="Pages">${prev ? html`<a href="${to(prev)}" rel="prev">← Previous page</a>` : ''}${
    prev && next ? ' ' : ''
  }${next ? html`<a href="${to(next)}" rel="next">Next page →</a>` : ''}</nav>`;
}
