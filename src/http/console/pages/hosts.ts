import { CONSOLE } from '../../base-path.ts';
import { badge, type Host, nextPageLink, type Page, useBar } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField } from '../console-router.ts';
import { html } from '../html.ts';

/** How many hosts a page shows. */
const PAGE_SIZE = 50;

function hostCard(call: ConsoleCall, h: Host) {
  const path = `${CONSOLE}/hosts/${encodeURIComponent(h.host_id)}`;
  const form =
    h.state === 'active'
      ? html`<form method="post" action="${path}/drain" data-confirm="Drain ${h.host_id}? No new server will be placed on it; the servers on it stay.">
  ${csrfField(call.csrf)}<button type="submit" class="danger">Drain ${h.host_id}</button>
</form>`
      : html`<form method="post" action="${path}/activate">
  ${csrfField(call.csrf)}<button type="submit">Activate ${h.host_id}</button>
</form>`;
  return html`<article class="card" id="host-${h.host_id}" aria-labelledby="host-${h.host_id}-h">
  <h2 id="host-${h.host_id}-h">${h.host_id} ${badge(h.state)}</h2>
  <p class="hint">${h.state === 'active' ? 'New servers may be placed here.' : 'No new server is placed here.'} Driver: ${h.driver}.</p>
  ${useBar('CPU', h.used.cpu, h.capacity.cpu, 'vCores')}
  ${useBar('RAM', h.used.ram_gb, h.capacity.ram_gb, 'GB')}
  ${useBar('Disk', h.used.disk_gb, h.capacity.disk_gb, 'GB')}
  ${h.capacity.backup_gb > 0 || h.used.backup_gb > 0 ? useBar('Backup', h.used.backup_gb, h.capacity.backup_gb, 'GB') : ''}
  <p>${h.services === 1 ? '1 server' : `${h.services} servers`} on it.</p>
  <div class="actions">${form}</div>
</article>`;
}

/** `CONSOLE/hosts`: each host's state and use, with Drain and Activate. */
export function registerHostsPage(router: ConsoleRouter): void {
  router.page('/hosts', async (call) => {
    const cursor = call.query('cursor');
    const hosts = await call.ops.get<Page<Host>>('hosts', { limit: PAGE_SIZE, cursor });
    const body = html`
${hosts.items.length === 0 ? html`<p class="empty">No hosts are configured.</p>` : ''}
<div class="cards">${hosts.items.map((h) => hostCard(call, h))}</div>
${nextPageLink('/hosts', {}, hosts.next_cursor)}`;
    return call.render({ title: 'Hosts', section: 'hosts', body });
  });

  for (const [verb, done] of [
    ['drain', 'is draining: no new server is placed on it'],
    ['activate', 'is active: new servers may be placed on it'],
  ] as const) {
    router.action(`/hosts/:host_id/${verb}`, async (call) => {
      const id = call.param('host_id');
      const { data } = await call.ops.send<Host>('POST', `hosts/${encodeURIComponent(id)}/${verb}`);
      return {
        redirect: `${CONSOLE}/hosts#host-${data.host_id}`,
        flash: { kind: 'ok', text: `Host ${data.host_id} ${done}.` },
      };
    });
  }
}
