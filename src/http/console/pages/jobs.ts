import type { Static } from 'typebox';
import { CONSOLE } from '../../base-path.ts';
import type { CancelPayload, ListedJobPayload, RetryPayload } from '../../schemas/operator.ts';
import { badge, beganNote, nextPageLink, type Page, retriedAs, table, time } from '../components.ts';
import type { ConsoleRouter } from '../console-router.ts';
import { backOf, buttonForm, pathParam } from '../forms.ts';
import { html } from '../html.ts';

type Job = Static<typeof ListedJobPayload>;
type Retried = Static<typeof RetryPayload>;
type Cancelled = Static<typeof CancelPayload>;

/** The tabs of the jobs page: what an operator acts on (failed: retry; queued: cancel) and what runs. */
const TABS = [
  ['failed', 'Failed'],
  ['queued', 'Queued'],
  ['running', 'Running'],
] as const;
type Tab = (typeof TABS)[number][0];

const PAGE_SIZE = 50;
const LIVE_SECONDS = 2;

function tabOf(value: string | undefined): Tab {
  return TABS.find(([key]) => key === value)?.[0] ?? 'failed';
}

/**
 * The jobs page (`CONSOLE/jobs`): failed jobs (the default) with a Retry form each, queued ones
 * with a Cancel form each (one that began says it cannot be cancelled instead, as the operator
 * API refuses its cancel), running ones; a page at a time, newest first. The queued and running
 * lists refresh by themselves while they hold any job.
 */
export function registerJobsPage(router: ConsoleRouter): void {
  router.page('/jobs', async (call) => {
    const status = tabOf(call.query('status'));
    // Failures already retried are left out of the failed tab unless asked for.
    const withRetried = status === 'failed' && call.query('include_retried') === 'true';
    const filter = { status, ...(withRetried ? { include_retried: 'true' } : {}) };
    const list = await call.ops.get<Page<Job>>('jobs', {
      ...filter,
      cursor: call.query('cursor'),
      limit: PAGE_SIZE,
    });
    const here = `${CONSOLE}/jobs?${new URLSearchParams(filter).toString()}`;
    const live = status !== 'failed' && list.items.length > 0;
    const operate = call.can('operate');
    const rows = list.items.map((j) => {
      const what = `${j.action} job of ${j.domain || `service ${j.service_id}`}`;
      const act =
        j.retry_job_id !== null
          ? retriedAs(j.retry_job_id)
          : !operate
            ? ''
            : j.status === 'failed'
              ? buttonForm({
                  csrf: call.csrf,
                  action: `${CONSOLE}/jobs/${j.job_id}/retry`,
                  label: 'Retry',
                  name: `Retry the ${what}`,
                  back: here,
                })
              : j.status !== 'queued'
                ? ''
                : j.cancellable
                  ? buttonForm({
                      csrf: call.csrf,
                      action: `${CONSOLE}/jobs/${j.job_id}/cancel`,
                      label: 'Cancel',
                      name: `Cancel the ${what}`,
                      kind: 'secondary',
                      back: here,
                    })
                  : beganNote();
      return html`<tr><td>${time(j.created_at)}</td><td>${j.action}</td>
<td><a href="${CONSOLE}/services/${j.service_id}">${j.domain || j.service_id}</a> <span class="mono id">${j.service_id}</span></td>
<td><a href="${CONSOLE}/resellers/${j.reseller_id}">${j.reseller_name}</a></td>
<td>${badge(j.status)}</td><td class="num">${j.attempts}</td><td>${j.error ?? ''}</td><td>${act}</td></tr>`;
    });
    const label = TABS.find(([key]) => key === status)?.[1] ?? '';
    const body = html`
<nav class="tabs" aria-label="Jobs by status"><ul>
${TABS.map(
  ([key, text]) =>
    html`<li><a href="${CONSOLE}/jobs?status=${key}"${key === status ? html` aria-current="page"` : ''}>${text}</a></li>`,
)}
</ul></nav>
${
  status !== 'failed'
    ? ''
    : withRetried
      ? html`<p>Failures already retried are shown. <a href="${CONSOLE}/jobs?status=failed">Hide retried failures</a></p>`
      : html`<p>Failures already retried (by an operator, or by a later job of the same action that succeeded) are hidden. <a href="${CONSOLE}/jobs?status=failed&amp;include_retried=true">Include retried failures</a></p>`
}
<div id="jobs-live"${live ? html` data-live="${LIVE_SECONDS}"` : ''}>
${table(
  `${label} jobs, newest first`,
  ['Created', 'Action', 'Service', 'Reseller', 'Status', 'Attempts', 'Error', ''],
  rows,
  `No ${status} jobs.`,
)}
</div>
${nextPageLink('/jobs', filter, list.next_cursor)}`;
    return call.render({ title: 'Jobs', section: 'jobs', body });
  });

  router.action('/jobs/:job_id/retry', async (call) => {
    const answer = await call.ops.send<Retried>('POST', `jobs/${pathParam(call, 'job_id')}/retry`);
    const job = answer.data.job;
    const text = job
      ? `Retry: queued as a new ${job.action} job for service ${job.service_id}.`
      : answer.message || 'Nothing left to do.';
    return { redirect: backOf(call, `${CONSOLE}/jobs`), flash: { kind: 'ok', text } };
  });

  router.action('/jobs/:job_id/cancel', async (call) => {
    const answer = await call.ops.send<Cancelled>('POST', `jobs/${pathParam(call, 'job_id')}/cancel`);
    const { job, service } = answer.data;
    const text = `Cancelled the queued ${job.action} job of service ${job.service_id}; the service is ${service.status}.`;
    return { redirect: backOf(call, `${CONSOLE}/jobs?status=queued`), flash: { kind: 'ok', text } };
  });
}
