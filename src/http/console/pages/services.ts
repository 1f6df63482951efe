import type { Static } from 'typebox';
import { groupThousands } from '../../../domain/code-unit-text.ts';
import { STATUSES } from '../../../domain/status-machine.ts';
import { CONSOLE } from '../../base-path.ts';
import type { CatalogProductPayload, ResellerPayload } from '../../schemas/operator.ts';
import type { ServiceListPayload } from '../../schemas/services.ts';
import { badge, type Page, pagerLinks, table, time } from '../components.ts';
import type { ConsoleRouter } from '../console-router.ts';
import { selectField } from '../forms.ts';
import { type Html, html } from '../html.ts';

type ServiceList = Static<typeof ServiceListPayload>;
type Reseller = Static<typeof ResellerPayload>;
type Product = Static<typeof CatalogProductPayload>;

const PAGE_SIZE = 50;

/** A service's status, with where its pending jobs lead when that differs. */
export function statusCell(status: string, projected: string, pending: number): Html {
  return html`${badge(status)}${projected !== status ? html` → ${badge(projected)}` : ''}${
    pending > 0 ? html` <span class="pending">${pending} pending</span>` : ''
  }`;
}

/** The list's orders, as the operator API names them, in words. */
const SORTS: readonly (readonly [string, string])[] = [
  ['-created', 'Newest first'],
  ['created', 'Oldest first'],
  ['domain', 'Domain, A to Z'],
  ['-domain', 'Domain, Z to A'],
  ['status', 'Status, A to Z'],
  ['-status', 'Status, Z to A'],
];

/**
 * The services list (`CONSOLE/services`): the operator API's search (`q`: part of a domain name,
 * or its start; an id prefix; an IP address), filters (status, reseller, product; host from the
 * links in the list, product from them too) and orders, a page at a time with the previous and next pages, how many
 * match, and each service linked to its page with its product's and plan's names.
 */
export function registerServicesPage(router: ConsoleRouter): void {
  router.page('/services', async (call) => {
    const filters = {
      q: call.query('q'),
      match: call.query('match'),
      status: call.query('status'),
      reseller_id: call.query('reseller_id'),
      host_id: call.query('host_id'),
      product_id: call.query('product_id'),
      sort: call.query('sort'),
    };
    const [list, resellers, products] = await Promise.all([
      call.ops.get<ServiceList>('services', {
        ...filters,
        cursor: call.query('cursor'),
        limit: PAGE_SIZE,
      }),
      // For the filter and the names in the list; providers have tens of resellers, not thousands.
      call.ops.get<Page<Reseller>>('resellers', { limit: 1000 }),
      // The catalogue's products, retired ones too (their services remain).
      call.ops.get<Product[]>('products'),
    ]);
    const names = new Map(resellers.items.map((r) => [r.reseller_id, r.name]));
    const { sort: _sort, match: _match, ...narrowing } = filters;
    const filtered = Object.values(narrowing).some((v) => v !== undefined);
    const order = SORTS.find(([value]) => value === (filters.sort ?? '-created'))?.[1] ?? '';
    // A link that narrows the list to one host or product, keeping the other filters.
    const narrow = (key: 'host_id' | 'product_id', value: string) => {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries({ ...filters, [key]: value })) if (v) params.set(k, v);
      return `${CONSOLE}/services?${params.toString()}`;
    };
    const count = list.total_capped
      ? `More than ${groupThousands(list.total)} services`
      : `${groupThousands(list.total)} ${list.total === 1 ? 'service' : 'services'}`;
    const body = html`
<form method="get" action="${CONSOLE}/services" class="filters" role="search" aria-label="Services">
  <div><label for="q">Search</label>
  <input type="search" id="q" name="q" value="${filters.q ?? ''}" maxlength="253" placeholder="domain, id prefix or IP"></div>
  <div><label for="match">Domain</label>
  <select id="match" name="match">
  <option value="contains">contains the search</option>
  <option value="prefix"${filters.match === 'prefix' ? html` selected` : ''}>starts with the search</option>
  </select></div>
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
  ${selectField({
    id: 'product_id',
    label: 'Product',
    any: 'Any product',
    options: products.map((p) => [p.id, p.retired ? `${p.name} (retired)` : p.name]),
    selected: filters.product_id,
  })}
  <div><label for="sort">Order</label>
  <select id="sort" name="sort">
  ${SORTS.map(([value, text]) => html`<option value="${value}"${value === (filters.sort ?? '-created') ? html` selected` : ''}>${text}</option>`)}
  </select></div>
  ${filters.host_id ? html`<input type="hidden" name="host_id" value="${filters.host_id}">` : ''}
  <button type="submit">Search</button>
  ${filtered ? html`<a href="${CONSOLE}/services">Clear</a>` : ''}
</form>
${table(
  `${filtered ? 'Services found' : 'Services'}, ${order.toLowerCase()}`,
  ['Domain', 'Service', 'Status', 'Reseller', 'Product', 'Plan', 'Host', 'IP', 'Created'],
  list.items.map(
    (s) => html`<tr>
<td><a href="${CONSOLE}/services/${s.service_id}">${s.domain_name}</a></td>
<td class="mono id">${s.service_id}</td>
<td>${statusCell(s.status, s.projected_status, s.pending_jobs)}</td>
<td>${names.get(s.reseller_id) ?? s.reseller_id}</td>
<td><a href="${narrow('product_id', s.product_id)}" title="Only this product’s services">${s.product_name ?? s.product_id}</a></td>
<td>${s.plan_name ?? html`<span class="none">custom</span>`}</td>
<td>${s.host_id === null ? html`<span class="none">—</span>` : html`<a href="${narrow('host_id', s.host_id)}" title="Only this host’s services">${s.host_id}</a>`}</td>
<td class="mono">${s.ip || html`<span class="none">—</span>`}</td>
<td>${time(s.created_at)}</td>
</tr>`,
  ),
  filtered ? 'No service matches.' : 'No services yet.',
)}
<p class="total" role="status">${count}</p>
${pagerLinks('/services', filters, list.prev_cursor, list.next_cursor)}`;
    return call.render({ title: 'Services', section: 'services', body });
  });
}
