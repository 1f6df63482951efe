import type { Static } from 'typebox';
import { CONSOLE } from '../../base-path.ts';
import type { AuditEntryPayload } from '../../schemas/operator.ts';
import { badge, nextPageLink, type Page, table, time } from '../components.ts';
import type { ConsoleCall, ConsoleRouter } from '../console-router.ts';
import { type Html, html } from '../html.ts';
import { OpsRefusal } from '../ops-client.ts';

type Entry = Static<typeof AuditEntryPayload>;

/** How many entries a page lists. */
const PAGE_SIZE = 50;

/** The filters the page passes to `GET OPS/audit`, as the query names them. */
type Filters = Record<
  'actor' | 'actor_name' | 'action' | 'service_id' | 'reseller_id' | 'after',
  string | undefined
>;

function filterForm(f: Filters, me: string): Html {
  return html`<form method="get" action="${CONSOLE}/audit" class="filters">
  <div><label for="audit-actor">Actor</label>
  <input id="audit-actor" name="actor" value="${f.actor ?? ''}" placeholder="operator:ID" aria-describedby="audit-actor-hint" maxlength="220">
  <span id="audit-actor-hint" class="hint">operator, application, cli or system, optionally with :id</span></div>
  <div><label for="audit-actor-name">Actor name</label>
  <input id="audit-actor-name" name="actor_name" value="${f.actor_name ?? ''}" maxlength="300"></div>
  <div><label for="audit-action">Action</label>
  <input id="audit-action" name="action" value="${f.action ?? ''}" placeholder="service.suspend" maxlength="100"></div>
  <div><label for="audit-service">Service id</label>
  <input id="audit-service" name="service_id" value="${f.service_id ?? ''}" maxlength="64"></div>
  <div><label for="audit-reseller">Reseller id</label>
  <input id="audit-reseller" name="reseller_id" value="${f.reseller_id ?? ''}" maxlength="64"></div>
  <div><label for="audit-after">After entry id</label>
  <input id="audit-after" name="after" value="${f.after ?? ''}" aria-describedby="audit-after-hint" maxlength="64">
  <span id="audit-after-hint" class="hint">then oldest first</span></div>
  <div><button type="submit">Filter</button></div>
</form>
<p><a href="${CONSOLE}/audit?actor=operator:${me}">My changes</a> · <a href="${CONSOLE}/audit">All entries</a></p>`;
}

const CREDENTIALS = {
  operator_client: 'API client',
  console_session: 'console session',
  application: 'application',
} as const;

/** The actor by name (the id only when the entry has none), how it came in, and from where. */
function actorOf(e: Entry, me: string): Html {
  const you = e.actor.type === 'operator' && e.actor.id === me ? ' (you)' : '';
  const who = e.actor.name ?? html`<span class="mono">${e.actor.id}</span>`;
  const how = e.credential
    ? html`<br><span class="hint">${CREDENTIALS[e.credential.type]} <span class="mono" title="${e.credential.id}">${e.credential.id.slice(0, 12)}</span></span>`
    : '';
  const where = e.source_address ? html`<br><span class="hint">from ${e.source_address}</span>` : '';
  return html`${e.actor.type} <strong>${who}</strong>${you}${how}${where}`;
}

/** A service by its domain, linked to its page. */
function serviceLink(id: string, domain: string | null): Html {
  return html`<a href="${CONSOLE}/services/${id}">${domain ?? html`<span class="mono">${id}</span>`}</a>`;
}

function targetOf(e: Entry): Html {
  if (!e.target) return html`<span class="none">—</span>`;
  if (e.target.type === 'service') return html`service ${serviceLink(e.target.id, e.service_domain)}`;
  if (e.target.type === 'reseller')
    return html`reseller <a class="mono" href="${CONSOLE}/resellers/${e.target.id}">${e.target.id}</a>`;
  const about =
    e.service_id && e.service_id !== e.target.id
      ? html` of service ${serviceLink(e.service_id, e.service_domain)}`
      : '';
  return html`${e.target.type} <span class="mono">${e.target.id}</span>${about}`;
}

function entriesTable(call: ConsoleCall, page: Page<Entry>, f: Filters, me: string): Html {
  return html`${table(
    f.after ? 'Audit entries after the given one, oldest first' : 'Audit entries, newest first',
    ['Time', 'Actor', 'Action', 'Target', 'Reason', 'Outcome', 'Request id'],
    page.items.map(
      (e) => html`<tr><td>${time(e.created_at)}</td><td>${actorOf(e, me)}</td><td>${e.action}</td>
<td>${targetOf(e)}</td><td>${e.reason ?? html`<span class="none">—</span>`}</td><td>${badge(e.outcome === 'ok' ? 'ok' : 'refused')} ${e.outcome === 'ok' ? '' : html`<code>${e.outcome}</code>`}</td>
<td class="mono">${e.request_id ?? html`<span class="none">—</span>`}</td></tr>`,
    ),
    call.query('cursor') ? 'No more entries.' : 'No entries match.',
  )}
${nextPageLink('/audit', f, page.next_cursor)}`;
}

/** `CONSOLE/audit`: who changed what, filtered by actor, actor name, action, service, reseller, or after an entry; paged. */
export function registerAuditPage(router: ConsoleRouter): void {
  router.page('/audit', async (call) => {
    const filters: Filters = {
      actor: call.query('actor'),
      actor_name: call.query('actor_name'),
      action: call.query('action'),
      service_id: call.query('service_id'),
      reseller_id: call.query('reseller_id'),
      after: call.query('after'),
    };
    const me = call.session.operatorId;
    let entries: Html;
    try {
      const page = await call.ops.get<Page<Entry>>('audit', {
        ...filters,
        limit: PAGE_SIZE,
        cursor: call.query('cursor'),
      });
      entries = entriesTable(call, page, filters, me);
    } catch (err) {
      // A filter the API refuses: the form again, with its reason.
      if (!(err instanceof OpsRefusal) || err.status !== 400) throw err;
      entries = html`<p class="error" role="alert">${err.message}</p>`;
    }
    return call.render({
      title: 'Audit',
      section: 'audit',
      body: html`${filterForm(filters, me)}${entries}`,
    });
  });
}
