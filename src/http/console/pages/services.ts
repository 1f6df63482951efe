import type { Static } from 'typebox';
import { STATUSES } from '../../../domain/status-machine.ts';
import { CONSOLE } from '../../base-path.ts';
import type { ResellerPayload } from '../../schemas/operator.ts';
import type { ServiceSummaryPayload } from '../../schemas/services.ts';
import { badge, nextPageLink, type Page, table, time } from '../components.ts';
import type { ConsoleRouter } from '../console-router.ts';
import { selectField } from '../forms.ts';
import { type Html, html } from '../html.ts';

type Summary = Static<typeof ServiceSummaryPayload>;
type Reseller = Static<typeof ResellerPayload>;

const PAGE_SIZE = 50;

/** A service's status, with where its pending jobs lead when that differs. */
export function statusCell(status: string, projected: string, pending: number): Html {
  return html`${badge(status)}${projected !== status ? html` → ${badge(projected)}` : ''}${
    pending > 0 ? html` <span class="pending">${pending} pending</span>` : ''
  }`;
}

/**
 * The services list (`CONSOLE/services`): the operator API's search (`q`: an id prefix, a domain
 * name or an IP address) and filters (status, reseller), a page at a time, each service linked to
 * its page.
 */
export function registerServicesPage(router: ConsoleRouter): void {
  router.page('/services', async (call) => {
    const filters = {
      q: call.query('q'),
      status: call.query('status'),
      reseller_id: call.query('reseller_id'),
    };
    const [list, resellers] = await Promise.all([
      call.ops.get<Page<Summary>>('services', {
        ...filters,
        cursor: call.query('cursor'),
        limit: PAGE_SIZE,
      }),
      // For the filter and the names in the list; providers have tens of resellers, not thousands.
      call.ops.get<Page<Reseller>>('resellers', { limit: 1000 }),
    ]);
    const names = new Map(resellers.items.map((r) => [r.reseller_id, r.name]));
    const filtered = Object.values(filters).some((v) => v !== undefined);
    const body = html`
<form method="get" action="${CONSOLE}/services" class="filters" role="search" aria-label="Services">
  <div><label for="q">Search</label>
  <input type="search" id="q" name="q" value="${filters.q ?? ''}" maxlength="253" placeholder="id prefix, domain or IP"></div>
  ${selectField({
    id: 'status',
    label: 'Status',
    any: 'Any status',
    options: STATUSES.map((s) => [s, s]),
    selected: filters.status,
  })}
  ${selectField({
    id: 'reseller_id',
    label: 'Reseller',
    any: 'Any reseller',
    options: resellers.items.map((r) => [r.reseller_id, r.name]),
    selected: filters.reseller_id,
  })}
  <button type="submit">Search</button>
  ${filtered ? html`<a href="${CONSOLE}/services">Clear</a>` : ''}
</form>
${table(
  filtered ? 'Services found, newest first' : 'Services, newest first',
  ['Domain', 'Service', 'Status', 'Reseller', 'Host', 'IP', 'Created'],
  list.items.map(
    (s) => html`<tr>
<td><a href="${CONSOLE}/services/${s.service_id}">${s.domain_name}</a></td>
<td class="mono id">${s.service_id}</td>
<td>${statusCell(s.status, s.projected_status, s.pending_jobs)}</td>
<td>${names.get(s.reseller_id) ?? s.reseller_id}</td>
<td>${s.host_id ?? html`<span class="none">—</span>`}</td>
<td class="mono">${s.ip || html`<span class="none">—</span>`}</td>
<td>${time(s.created_at)}</td>
</tr>`,
  ),
  filtered ? 'No service matches.' : 'No services yet.',
)}
${nextPageLink('/services', filters, list.next_cursor)}`;
    return call.render({ title: 'Services', section: 'services', body });
  });
}
