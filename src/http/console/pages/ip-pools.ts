import { commaList } from '../../../domain/comma-list.ts';
import { CONSOLE } from '../../base-path.ts';
import { type IpPool, table, useBar } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField } from '../console-router.ts';
import { buttonForm } from '../forms.ts';
import { html } from '../html.ts';

const poolUrl = (id: string) => `${CONSOLE}/ip-pools/${encodeURIComponent(id)}`;

function row(call: ConsoleCall, p: IpPool) {
  const range = p.family === 'ipv4' ? `${p.first} – ${p.last}` : `/${p.assign_prefix_length} per server`;
  return html`<tr id="pool-${p.pool_id}">
  <th scope="row">${p.name}</th>
  <td>${p.family === 'ipv4' ? 'IPv4' : 'IPv6'}</td>
  <td class="mono">${p.network}</td>
  <td class="mono">${p.gateway}</td>
  <td class="mono">${range}${p.reserved.length > 0 ? html`<br>reserved ${p.reserved.join(', ')}` : ''}</td>
  <td>${p.host_ids.length > 0 ? p.host_ids.join(', ') : html`<span class="hint">hosts no ${p.family === 'ipv4' ? 'IPv4' : 'IPv6'} pool names</span>`}</td>
  <td>${useBar(p.family === 'ipv4' ? 'Addresses' : 'Prefixes', p.usage.used, p.usage.total, '')}</td>
  <td>${
    call.can('manage')
      ? buttonForm({
          csrf: call.csrf,
          action: `${poolUrl(p.pool_id)}/delete`,
          label: `Remove ${p.name}`,
          kind: 'danger',
          confirm: `Remove the pool ${p.name}? Only a pool none of whose addresses a server holds can be removed.`,
        })
      : ''
  }</td>
</tr>`;
}

function addForm(call: ConsoleCall) {
  return html`<section aria-labelledby="add-h">
  <h2 id="add-h">Add an address pool</h2>
  <form method="post" action="${CONSOLE}/ip-pools" class="stack">
    ${csrfField(call.csrf)}
    <label for="new-name">Name (1 to 63 letters, digits, dots, dashes, underscores)</label>
    <input id="new-name" name="name" required maxlength="63" autocomplete="off">
    <label for="new-family">Family</label>
    <select id="new-family" name="family"><option value="ipv4">IPv4</option><option value="ipv6">IPv6</option></select>
    <label for="new-network">Network (e.g. 192.0.2.0/24 or 2001:db8:4000::/48)</label>
    <input id="new-network" name="network" required maxlength="100" autocomplete="off">
    <label for="new-gateway">Gateway (optional: IPv4 the network’s first address, IPv6 fe80::1)</label>
    <input id="new-gateway" name="gateway" maxlength="100" autocomplete="off">
    <label for="new-first">First address handed out (IPv4, optional)</label><input id="new-first" name="first" maxlength="100" autocomplete="off">
    <label for="new-last">Last address handed out (IPv4, optional)</label><input id="new-last" name="last" maxlength="100" autocomplete="off">
    <label for="new-reserved">Reserved addresses (IPv4, comma-separated, optional)</label><input id="new-reserved" name="reserved" autocomplete="off">
    <label for="new-assign">Prefix length per server (IPv6, optional, default 64)</label><input id="new-assign" name="assign_prefix_length" type="number" min="1" max="128">
    <label for="new-hosts">Hosts it serves (ids, comma-separated; empty: the hosts no pool of its family names)</label>
    <input id="new-hosts" name="host_ids" autocomplete="off">
    <div><button type="submit">Add pool</button></div>
  </form>
</section>`;
}

/** A form's text, or undefined when left empty. */
function textOf(text: string | undefined): string | undefined {
  const t = text?.trim();
  return t === undefined || t === '' ? undefined : t;
}

/** A comma-separated form field as a list (none when empty). */
const listOf = (text: string | undefined) => commaList(text ?? '');

/** `CONSOLE/ip-pools`: every address pool with its use, a form to add one, and removal. */
export function registerIpPoolsPage(router: ConsoleRouter): void {
  router.page('/ip-pools', async (call) => {
    const pools = await call.ops.get<IpPool[]>('ip-pools');
    const body = html`
<p class="hint">A host’s servers get their IPv4 addresses from the IPv4 pools that name the host (oldest first), and an IPv6 prefix from an IPv6 pool that names it. A pool that names no host serves the hosts no pool of its family names.</p>
${table(
  'Address pools',
  ['Name', 'Family', 'Network', 'Gateway', 'Handed out', 'Hosts', 'Use', ''],
  pools.map((p) => row(call, p)),
  'No address pools: add one below.',
)}
${call.can('manage') ? addForm(call) : ''}`;
    return call.render({ title: 'Address pools', section: 'ip-pools', body });
  });

  router.action('/ip-pools', async (call) => {
    const family = call.field('family') ?? '';
    const assign = textOf(call.field('assign_prefix_length'));
    const reserved = listOf(call.field('reserved'));
    const { data } = await call.ops.send<IpPool>('POST', 'ip-pools', {
      name: call.field('name') ?? '',
      family,
      network: call.field('network') ?? '',
      gateway: textOf(call.field('gateway')),
      first: textOf(call.field('first')),
      last: textOf(call.field('last')),
      ...(reserved.length > 0 ? { reserved } : {}),
      ...(assign !== undefined
        ? { assign_prefix_length: /^[0-9]{1,3}$/.test(assign) ? Number(assign) : assign }
        : {}),
      host_ids: listOf(call.field('host_ids')),
    });
    return {
      redirect: `${CONSOLE}/ip-pools#pool-${data.pool_id}`,
      flash: { kind: 'ok', text: `Address pool ${data.name} added.` },
    };
  });

  router.action('/ip-pools/:pool_id/delete', async (call) => {
    const id = call.param('pool_id');
    await call.ops.send('POST', `ip-pools/${encodeURIComponent(id)}/delete`);
    return { redirect: `${CONSOLE}/ip-pools`, flash: { kind: 'ok', text: 'Address pool removed.' } };
  });
}
