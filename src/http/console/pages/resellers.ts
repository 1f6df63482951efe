import type { Static } from 'typebox';
import { CONSOLE } from '../../base-path.ts';
import type { ResellerPayload } from '../../schemas/operator.ts';
import { badge, nextPageLink, type Page, table, time } from '../components.ts';
import { type ConsoleRouter, csrfField } from '../console-router.ts';
import { html } from '../html.ts';

type Reseller = Static<typeof ResellerPayload>;

/** How many resellers a page lists. */
const PAGE_SIZE = 50;

/** `CONSOLE/resellers`: every reseller, a page at a time, and a form to create one. */
export function registerResellersPages(router: ConsoleRouter): void {
  router.page('/resellers', async (call) => {
    const cursor = call.query('cursor');
    const list = await call.ops.get<Page<Reseller>>('resellers', { limit: PAGE_SIZE, cursor });
    const body = html`
<section aria-labelledby="list-h">
  <h2 id="list-h">Resellers</h2>
  ${table(
    'Resellers, by name',
    ['Name', 'State', 'Created'],
    list.items.map(
      (r) => html`<tr><td><a href="${CONSOLE}/resellers/${r.reseller_id}">${r.name}</a></td>
<td>${badge(r.enabled ? 'enabled' : 'disabled')}</td><td>${time(r.created_at)}</td></tr>`,
    ),
    cursor ? 'No more resellers.' : 'No resellers yet.',
  )}
  ${nextPageLink('/resellers', {}, list.next_cursor)}
</section>
${
  call.can('manage')
    ? html`<section aria-labelledby="create-h">
  <h2 id="create-h">Create a reseller</h2>
  <form method="post" action="${CONSOLE}/resellers" class="stack">
    ${csrfField(call.csrf)}
    <label for="reseller-name">Name of the new reseller</label>
    <input id="reseller-name" name="name" required maxlength="100" autocomplete="off">
    <p class="hint">Register its applications afterwards with <code>vrp client create --reseller NAME</code>.</p>
    <div><button type="submit">Create reseller</button></div>
  </form>
</section>`
    : ''
}`;
    return call.render({ title: 'Resellers', section: 'resellers', body });
  });

  router.action('/resellers', async (call) => {
    const created = await call.ops.send<Reseller>('POST', 'resellers', { name: call.field('name') ?? '' });
    return {
      redirect: `${CONSOLE}/resellers/${created.data.reseller_id}`,
      flash: { kind: 'ok', text: `Reseller "${created.data.name}" created.` },
    };
  });
}
