import { CONSOLE } from '../../base-path.ts';
import { badge, type Host, nextPageLink, type Page, time, useBar } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField } from '../console-router.ts';
import { buttonForm } from '../forms.ts';
import { html } from '../html.ts';

/** How many hosts a page shows. */
const PAGE_SIZE = 50;

const hostUrl = (id: string) => `${CONSOLE}/hosts/${encodeURIComponent(id)}`;

function evacuation(h: Host) {
  const e = h.evacuation;
  if (!e) return '';
  return html`<p class="evacuation">${h.state === 'evacuating' ? 'Evacuation' : 'Last evacuation'} since ${time(e.started_at)}: ${e.done} moved, ${e.failed} failed, ${e.running} moving, ${e.left} left.</p>`;
}

function editForm(call: ConsoleCall, h: Host) {
  const f = (field: string) => `host-${h.host_id}-${field}`;
  return html`<details><summary>Edit ${h.name}</summary>
<form method="post" action="${hostUrl(h.host_id)}/update" class="stack">
  ${csrfField(call.csrf)}
  <label for="${f('name')}">Name</label><input id="${f('name')}" name="name" value="${h.name}" maxlength="63" required>
  ${h.driver === 'libvirt' ? html`<label for="${f('uri')}">URI</label><input id="${f('uri')}" name="uri" value="${h.uri ?? ''}" maxlength="2000">` : ''}
  <label for="${f('cpu')}">vCores</label><input id="${f('cpu')}" name="cpu" type="number" min="1" value="${h.capacity.cpu}">
  <label for="${f('ram_gb')}">RAM (GB)</label><input id="${f('ram_gb')}" name="ram_gb" type="number" min="1" value="${h.capacity.ram_gb}">
  <label for="${f('disk_gb')}">Disk (GB)</label><input id="${f('disk_gb')}" name="disk_gb" type="number" min="1" value="${h.capacity.disk_gb}">
  ${h.driver === 'simulated' ? html`<label for="${f('backup_gb')}">Backup storage (GB)</label><input id="${f('backup_gb')}" name="backup_gb" type="number" min="0" value="${h.capacity.backup_gb}">` : ''}
  <div><button type="submit">Save ${h.name}</button></div>
</form></details>`;
}

function hostCard(call: ConsoleCall, h: Host) {
  const path = hostUrl(h.host_id);
  const stateForms = [
    h.state === 'active'
      ? html`<form method="post" action="${path}/drain" data-confirm="Drain ${h.name}? No new server will be placed on it; the servers on it stay.">
  ${csrfField(call.csrf)}<button type="submit" class="danger">Drain ${h.name}</button>
</form>`
      : html`<form method="post" action="${path}/activate">
  ${csrfField(call.csrf)}<button type="submit">Activate ${h.name}</button>
</form>`,
    h.state === 'evacuating'
      ? ''
      : buttonForm({
          csrf: call.csrf,
          action: `${path}/evacuate`,
          label: `Evacuate ${h.name}`,
          kind: 'danger',
          confirm: `Evacuate ${h.name}? No new server is placed on it and its servers are migrated to other hosts.`,
        }),
    buttonForm({
      csrf: call.csrf,
      action: `${path}/delete`,
      label: `Remove ${h.name}`,
      kind: 'danger',
      confirm: `Remove ${h.name}? Only a host without servers can be removed.`,
    }),
  ];
  const hint =
    h.state === 'active'
      ? 'New servers may be placed here.'
      : h.state === 'evacuating'
        ? 'No new server is placed here; its servers are being migrated off.'
        : 'No new server is placed here.';
  return html`<article class="card" id="host-${h.host_id}" aria-labelledby="host-${h.host_id}-h">
  <h2 id="host-${h.host_id}-h">${h.name} ${badge(h.state)}${h.health === 'up' ? '' : html` ${badge(h.health)}`}</h2>
  <p class="hint">${hint} Driver: ${h.driver}.${h.uri ? html` URI: <span class="mono">${h.uri}</span>.` : ''}</p>
  ${h.health === 'up' ? '' : html`<p class="error">Does not answer since ${time(h.failing_since)}: no server is placed here.</p>`}
  ${useBar('CPU', h.used.cpu, h.capacity.cpu, 'vCores')}
  ${useBar('RAM', h.used.ram_gb, h.capacity.ram_gb, 'GB')}
  ${useBar('Disk', h.used.disk_gb, h.capacity.disk_gb, 'GB')}
  ${h.capacity.backup_gb > 0 || h.used.backup_gb > 0 ? useBar('Backup', h.used.backup_gb, h.capacity.backup_gb, 'GB') : ''}
  <p>${h.services === 1 ? '1 server' : `${h.services} servers`} on it.</p>
  ${evacuation(h)}
  ${call.can('manage') ? html`<div class="actions">${stateForms}</div>${editForm(call, h)}` : ''}
</article>`;
}

function addForm(call: ConsoleCall) {
  return html`<section aria-labelledby="add-h">
  <h2 id="add-h">Add a host</h2>
  <form method="post" action="${CONSOLE}/hosts" class="stack">
    ${csrfField(call.csrf)}
    <label for="new-name">Name (1 to 63 letters, digits, dots, dashes, underscores)</label>
    <input id="new-name" name="name" required maxlength="63" autocomplete="off">
    <label for="new-driver">Driver</label>
    <select id="new-driver" name="driver"><option value="simulated">simulated</option><option value="libvirt">libvirt</option></select>
    <label for="new-uri">URI (libvirt hosts only, e.g. qemu+ssh://root@kvm1.example.com/system)</label>
    <input id="new-uri" name="uri" maxlength="2000" autocomplete="off">
    <label for="new-cpu">vCores</label><input id="new-cpu" name="cpu" type="number" min="1" required>
    <label for="new-ram">RAM (GB)</label><input id="new-ram" name="ram_gb" type="number" min="1" required>
    <label for="new-disk">Disk (GB)</label><input id="new-disk" name="disk_gb" type="number" min="1" required>
    <label for="new-backup">Backup storage (GB, simulated hosts only; optional)</label><input id="new-backup" name="backup_gb" type="number" min="0">
    <div><button type="submit">Add host</button></div>
  </form>
</section>`;
}

/** A form's number: a whole number as a number, anything else as typed (the API says what is wrong). */
function numberOf(text: string | undefined): number | string | undefined {
  const t = text?.trim();
  if (t === undefined || t === '') return undefined;
  return /^[0-9]{1,15}$/.test(t) ? Number(t) : t;
}

/** A form's text, or undefined when left empty. */
function textOf(text: string | undefined): string | undefined {
  const t = text?.trim();
  return t === undefined || t === '' ? undefined : t;
}

/** The fields of the add and edit forms, as the operator API takes them. */
function hostFields(call: ConsoleCall): Record<string, unknown> {
  return {
    name: textOf(call.field('name')),
    uri: textOf(call.field('uri')),
    cpu: numberOf(call.field('cpu')),
    ram_gb: numberOf(call.field('ram_gb')),
    disk_gb: numberOf(call.field('disk_gb')),
    backup_gb: numberOf(call.field('backup_gb')),
  };
}

/** `CONSOLE/hosts`: each host's state, health, use and evacuation, with its forms, and a form to add one. */
export function registerHostsPage(router: ConsoleRouter): void {
  router.page('/hosts', async (call) => {
    const cursor = call.query('cursor');
    const hosts = await call.ops.get<Page<Host>>('hosts', { limit: PAGE_SIZE, cursor });
    const body = html`
${hosts.items.length === 0 ? html`<p class="empty">No hosts yet: add one below.</p>` : ''}
<div class="cards">${hosts.items.map((h) => hostCard(call, h))}</div>
${nextPageLink('/hosts', {}, hosts.next_cursor)}
${call.can('manage') ? addForm(call) : ''}`;
    return call.render({ title: 'Hosts', section: 'hosts', body });
  });

  router.action('/hosts', async (call) => {
    const { data } = await call.ops.send<Host>('POST', 'hosts', {
      ...hostFields(call),
      name: call.field('name') ?? '',
      driver: call.field('driver') ?? '',
    });
    return {
      redirect: `${CONSOLE}/hosts#host-${data.host_id}`,
      flash: {
        kind: 'ok',
        text:
          data.health === 'up'
            ? `Host ${data.name} added.`
            : `Host ${data.name} added; its connection does not answer, so no server is placed on it until it does.`,
      },
    };
  });

  router.action('/hosts/:host_id/update', async (call) => {
    const id = call.param('host_id');
    const { data } = await call.ops.send<Host>('PATCH', `hosts/${encodeURIComponent(id)}`, hostFields(call));
    return {
      redirect: `${CONSOLE}/hosts#host-${data.host_id}`,
      flash: { kind: 'ok', text: `Host ${data.name} saved.` },
    };
  });

  for (const [verb, done] of [
    ['drain', 'is draining: no new server is placed on it'],
    ['activate', 'is active: new servers may be placed on it'],
    ['evacuate', 'is evacuating: its servers are being migrated to other hosts'],
  ] as const) {
    router.action(`/hosts/:host_id/${verb}`, async (call) => {
      const id = call.param('host_id');
      const { data } = await call.ops.send<Host>('POST', `hosts/${encodeURIComponent(id)}/${verb}`);
      return {
        redirect: `${CONSOLE}/hosts#host-${data.host_id}`,
        flash: { kind: 'ok', text: `Host ${data.name} ${done}.` },
      };
    });
  }

  router.action('/hosts/:host_id/delete', async (call) => {
    const id = call.param('host_id');
    await call.ops.send('POST', `hosts/${encodeURIComponent(id)}/delete`);
    return { redirect: `${CONSOLE}/hosts`, flash: { kind: 'ok', text: 'Host removed.' } };
  });
}
