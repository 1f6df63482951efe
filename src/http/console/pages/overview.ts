import type { Static } from 'typebox';
import { CONSOLE } from '../../base-path.ts';
import type { OperatorJobPayload, OverviewPayload } from '../../schemas/operator.ts';
import { badge, type Host, type Page, table, time, useBar } from '../components.ts';
import type { ConsoleRouter } from '../console-router.ts';
import { html } from '../html.ts';

type Overview = Static<typeof OverviewPayload>;
type Job = Static<typeof OperatorJobPayload>;

/** The overview (`CONSOLE/`): services by status, failed jobs of the last 24 hours, hosts' use. */
export function registerOverviewPage(router: ConsoleRouter): void {
  router.page('/', async (call) => {
    const [overview, hosts, failed] = await Promise.all([
      call.ops.get<Overview>('overview'),
      call.ops.get<Page<Host>>('hosts'),
      // With retried ones, as the count of the last 24 hours counts them.
      call.ops.get<Page<Job>>('jobs', { status: 'failed', include_retried: 'true', limit: 20 }),
    ]);
    // Newest first: the failures of the last 24 hours are the list's first ones.
    const recent = failed.items.slice(0, overview.jobs.failed_last_24h);
    const statuses = Object.entries(overview.services).filter(([, n]) => n > 0);
    const body = html`
<section aria-labelledby="services-h">
  <h2 id="services-h">Services by status</h2>
  ${table(
    'Services by status',
    ['Status', 'Services'],
    statuses.map(
      ([status, n]) =>
        html`<tr><td>${badge(status)}</td><td class="num"><a href="${CONSOLE}/services?status=${status}">${n}</a></td></tr>`,
    ),
    'No services yet.',
  )}
  <p>Jobs now: <a href="${CONSOLE}/jobs?status=queued">${overview.jobs.queued} queued</a>,
  <a href="${CONSOLE}/jobs?status=running">${overview.jobs.running} running</a>.</p>
</section>
<section aria-labelledby="failed-h">
  <h2 id="failed-h">Failed jobs, last 24 hours (${overview.jobs.failed_last_24h})</h2>
  ${table(
    'Failed jobs of the last 24 hours, newest first',
    ['Created', 'Action', 'Service', 'Error'],
    recent.map(
      (j) => html`<tr><td>${time(j.created_at)}</td><td>${j.action}</td>
<td><a href="${CONSOLE}/services/${j.service_id}">${j.service_id.slice(0, 8)}</a></td><td>${j.error ?? ''}</td></tr>`,
    ),
    'No job failed in the last 24 hours.',
  )}
  ${overview.jobs.failed_last_24h > recent.length ? html`<p><a href="${CONSOLE}/jobs?status=failed">All failed jobs</a></p>` : ''}
</section>
<section aria-labelledby="hosts-h">
  <h2 id="hosts-h">Hosts</h2>
  <div class="cards">
  ${hosts.items.map(
    (h) => html`<article class="card">
  <h3><a href="${CONSOLE}/hosts#host-${h.host_id}">${h.host_id}</a> ${badge(h.state)}</h3>
  ${useBar('CPU', h.used.cpu, h.capacity.cpu, 'vCores')}
  ${useBar('RAM', h.used.ram_gb, h.capacity.ram_gb, 'GB')}
  ${useBar('Disk', h.used.disk_gb, h.capacity.disk_gb, 'GB')}
  <p>${h.services} servers</p>
</article>`,
  )}
  </div>
</section>`;
    return call.render({ title: 'Overview', section: 'overview', body });
  });
}
