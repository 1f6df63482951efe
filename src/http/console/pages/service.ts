import type { Static } from 'typebox';
import type { Operation } from '../../../domain/status-machine.ts';
import { CONSOLE } from '../../base-path.ts';
import type { ResellerPayload } from '../../schemas/operator.ts';
import type { ReverseDnsPayload } from '../../schemas/reverse-dns.ts';
import type { ServiceDetailsPayload } from '../../schemas/services.ts';
import { badge, beganNote, type Host, type Page, retriedAs, table, time } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField, sendPage } from '../console-router.ts';
import { buttonForm, pathParam } from '../forms.ts';
import { type Html, html } from '../html.ts';
import { OpsRefusal } from '../ops-client.ts';
import { statusCell } from './services.ts';

type Details = Static<typeof ServiceDetailsPayload>;
type Job = Details['jobs'][number];
type Backup = Details['backups'][number];
/** What `POST OPS/backups/{id}/verify` answers. */
interface VerifyAnswer {
  readonly ok: boolean;
  readonly segments: number;
  readonly bad: readonly { segment: number; offset: number; length: number; reason: string }[];
}
type Reseller = Static<typeof ResellerPayload>;
type AddressPtrs = Static<typeof ReverseDnsPayload>;
/** What `POST OPS/services/{id}/rescue` answers. */
interface RescueLogin {
  readonly username: string;
  readonly password: string;
}

/** How often (seconds) the status, timeline and backups are fetched again while jobs are pending. */
const LIVE_SECONDS = 2;

/**
 * The operations that are one button, in the order the page shows them: the console's path (the
 * operator API's is the same under OPS/services/ID/), the button, and what a confirmation asks.
 */
const BUTTONS: readonly {
  readonly op: Operation;
  readonly path: string;
  readonly label: string;
  readonly confirm?: string;
}[] = [
  { op: 'create', path: 'create', label: 'Provision' },
  { op: 'start', path: 'start', label: 'Start' },
  { op: 'stop', path: 'stop', label: 'Stop' },
  { op: 'restart', path: 'restart', label: 'Restart' },
  { op: 'unsuspend', path: 'unsuspend', label: 'Unsuspend' },
  { op: 'unrescue', path: 'unrescue', label: 'Leave rescue' },
  { op: 'backup_create', path: 'backup/create', label: 'Create a backup' },
  {
    op: 'terminate',
    path: 'terminate',
    label: 'Terminate',
    confirm: 'Terminate this server? Its disk, addresses and backups are released; this cannot be undone.',
  },
];

const serviceUrl = (id: string) => `${CONSOLE}/services/${id}`;

function facts(s: Details, reseller: string): Html {
  return html`<dl class="facts">
<dt>Status</dt><dd class="service-status">${statusCell(s.status, s.projected_status, s.pending_jobs)}</dd>
${s.suspend_reason ? html`<dt>Suspended because</dt><dd>${s.suspend_reason}</dd>` : ''}
${s.rescue_until ? html`<dt>Rescue ends by itself</dt><dd class="rescue-until">${time(s.rescue_until)}</dd>` : ''}
${s.error ? html`<dt>Failed because</dt><dd class="service-error">${s.error.message} <span class="mono">(${s.error.code})</span></dd>` : ''}
<dt>Domain</dt><dd>${s.domain_name}</dd>
<dt>Service id</dt><dd class="mono">${s.service_id}</dd>
<dt>Reseller</dt><dd><a href="${CONSOLE}/services?reseller_id=${s.reseller_id}">${reseller}</a></dd>
<dt>Product</dt><dd class="mono">${s.product_id}</dd>
<dt>Host</dt><dd>${s.host ? html`${s.host.host_id} ${badge(s.host.state)}` : html`<span class="none">none yet</span>`}</dd>${s.host?.mac ? html`<dt>MAC address</dt><dd><code>${s.host.mac}</code></dd>` : ''}
<dt>IP addresses</dt><dd class="mono">${s.ips.length > 0 ? s.ips.join(', ') : html`<span class="none">none yet</span>`}</dd>
<dt>IPv6</dt><dd class="mono service-ipv6">${s.ipv6 ? `${s.ipv6.address} in ${s.ipv6.prefix}, gateway ${s.ipv6.gateway}` : html`<span class="none">none</span>`}</dd>
<dt>Traffic this month</dt><dd class="service-traffic">${s.traffic_in_gb} GB in, ${s.traffic_out_gb} GB out${s.traffic_gb !== null ? ` (quota ${s.traffic_gb} GB, then ${s.traffic_over})` : ''}</dd>
<dt>Sizes</dt><dd>${s.cpu} vCores, ${s.ram} GB RAM, ${s.hdd} GB disk, ${s.ip_count} IP, ${s.backup} GB backups</dd>
<dt>Root login</dt><dd class="mono">${s.username}</dd>
<dt>SSH keys</dt><dd class="mono">${s.ssh_key_fingerprints.length > 0 ? s.ssh_key_fingerprints.join(', ') : html`<span class="none">none</span>`}</dd>
<dt>Created</dt><dd>${time(s.created_at)}</dd>
${s.terminated_at ? html`<dt>Terminated</dt><dd>${time(s.terminated_at)}</dd>` : ''}
</dl>`;
}

type Suspension = Details['suspensions'][number];

/** An actor of the suspension history by name (the id only when none was recorded). */
function actorName(a: Suspension['suspended_by']): Html {
  return html`${a.type} <strong>${a.name ?? a.id}</strong>`;
}

function suspensions(s: Details): Html {
  return table(
    'Suspensions, newest first',
    ['Suspended', 'By', 'Reason', 'Lifted', 'Lifted by'],
    s.suspensions.map(
      (x: Suspension) => html`<tr><td>${time(x.suspended_at)}</td><td>${actorName(x.suspended_by)}</td>
<td>${x.reason ?? html`<span class="none">—</span>`}</td><td>${x.lifted_at ? time(x.lifted_at) : html`<span class="none">still suspended</span>`}</td>
<td>${x.lifted_by ? actorName(x.lifted_by) : html`<span class="none">—</span>`}</td></tr>`,
    ),
    'Never suspended.',
  );
}

function timeline(s: Details, csrf: string, operate: boolean): Html {
  const back = serviceUrl(s.service_id);
  return table(
    'Jobs, newest first',
    ['Created', 'Action', 'Status', 'Started by', 'Attempts', 'Finished', 'Error', ''],
    s.jobs.map((j: Job) => {
      const what = `${j.action} job of ${j.created_at.slice(0, 19).replace('T', ' ')}`;
      const act = !operate
        ? ''
        : j.retry_job_id !== null
          ? retriedAs(j.retry_job_id)
          : j.status === 'failed'
            ? buttonForm({
                csrf,
                action: `${CONSOLE}/jobs/${j.job_id}/retry`,
                label: 'Retry',
                name: `Retry ${what}`,
                back,
              })
            : j.status !== 'queued'
              ? ''
              : j.cancellable
                ? buttonForm({
                    csrf,
                    action: `${CONSOLE}/jobs/${j.job_id}/cancel`,
                    label: 'Cancel',
                    name: `Cancel ${what}`,
                    kind: 'secondary',
                    back,
                  })
                : beganNote();
      return html`<tr><td>${time(j.created_at)}</td><td>${j.action}</td>
<td>${badge(j.status)}</td><td>${j.started_by ? actorName(j.started_by) : html`<span class="none">—</span>`}</td>
<td class="num">${j.attempts}</td><td>${time(j.finished_at)}</td><td>${j.error ?? ''}</td><td>${act}</td></tr>`;
    }),
    'No jobs yet.',
  );
}

function backups(s: Details, csrf: string, allowed: ReadonlySet<string>, operate: boolean): Html {
  const base = serviceUrl(s.service_id);
  return table(
    'Backups',
    ['Created', 'Kind', 'Chain', 'Status', 'Size', ''],
    s.backups.map((b: Backup) => {
      const when = b.created_at.slice(0, 19).replace('T', ' ');
      const ready = b.status === 'available';
      const parent = b.parent_id && s.backups.find((p: Backup) => p.backup_id === b.parent_id);
      const chain =
        b.format === 'legacy'
          ? 'legacy (on its host)'
          : b.parent_id
            ? html`incremental on ${parent ? time(parent.created_at) : b.parent_id}`
            : 'full';
      return html`<tr><td>${time(b.created_at)}</td><td>${b.kind}</td><td>${chain}</td><td>${badge(b.status)}</td>
<td class="num">${b.size_gb} GB</td><td><div class="actions">
${operate && ready && b.format === 'archive' ? buttonForm({ csrf, action: `${base}/backups/${b.backup_id}/verify`, label: 'Verify', name: `Verify the backup of ${when}` }) : ''}
${ready && allowed.has('backup_restore') ? buttonForm({ csrf, action: `${base}/backups/${b.backup_id}/restore`, label: 'Restore', name: `Restore the backup of ${when}`, confirm: `Restore the backup of ${when}? The server's disk is put back as the backup holds it.` }) : ''}
${ready && allowed.has('backup_delete') ? buttonForm({ csrf, action: `${base}/backups/${b.backup_id}/delete`, label: 'Delete', name: `Delete the backup of ${when}`, kind: 'danger', confirm: `Delete the backup of ${when}?` }) : ''}
</div></td></tr>`;
    }),
    'No backups.',
  );
}

function operations(s: Details, csrf: string, allowed: ReadonlySet<string>): Html {
  const base = serviceUrl(s.service_id);
  const buttons = BUTTONS.filter((b) => allowed.has(b.op)).map((b) =>
    buttonForm({
      csrf,
      action: `${base}/${b.path}`,
      label: b.label,
      ...(b.confirm ? { confirm: b.confirm, kind: 'danger' as const } : {}),
    }),
  );
  const rescue =
    allowed.has('rescue') &&
    buttonForm({
      csrf,
      action: `${base}/rescue`,
      label: 'Rescue',
      confirm:
        'Boot the rescue system? The server’s own system stops; its disk is attached to the rescue system. The rescue login is shown once, on the next page.',
    });
  if (rescue) buttons.push(rescue);
  const suspend =
    allowed.has('suspend') &&
    html`<form method="post" action="${base}/suspend" class="stack">
${csrfField(csrf)}
<label for="suspend_reason">Reason for the suspension (optional, shown to the reseller)</label>
<input id="suspend_reason" name="suspend_reason" maxlength="1000">
<div><button type="submit">Suspend</button></div>
</form>`;
  const password =
    allowed.has('reset_password') &&
    html`<form method="post" action="${base}/reset-password" class="stack">
${csrfField(csrf)}
<label for="password">New root password (8 to 128 characters, three of lower case, upper case, digits, symbols)</label>
<input id="password" name="password" type="password" autocomplete="new-password" required maxlength="128">
<div><button type="submit">Set the root password</button></div>
</form>`;
  // The server's console in the browser, in a new tab (a one-time link the form's answer opens).
  const consoleForm =
    (s.status === 'running' || s.status === 'rescue') &&
    html`<form method="post" action="${base}/console" target="_blank">
${csrfField(csrf)}
<button type="submit">Open console</button>
</form>`;
  const reinstall = allowed.has('reinstall') && reinstallForm(s, csrf);
  if (buttons.length === 0 && !suspend && !password && !consoleForm && !reinstall) {
    return html`<p class="empty">This service accepts no operation now.</p>`;
  }
  return html`<div class="actions">${buttons}${consoleForm}</div>${suspend}${password}${reinstall}`;
}

/** Reinstall: one of the product's templates, an optional password, optional keys (one per line). */
function reinstallForm(s: Details, csrf: string): Html {
  return html`<form method="post" action="${serviceUrl(s.service_id)}/reinstall" class="stack" data-confirm="Reinstall this server? Everything on its disk is lost; its addresses and backups stay.">
${csrfField(csrf)}
<label for="reinstall-template">Reinstall from template (everything on the disk is lost)</label>
<select id="reinstall-template" name="template_id" required>
${s.os_templates.map((t) => html`<option value="${t.template_id}"${t.template_id === s.template_id ? ' selected' : ''}${t.available ? '' : ' disabled'}>${t.name}${t.available ? '' : ' (no image yet)'}</option>`)}
</select>
<label for="reinstall-password">Root password after the reinstall (optional; empty: a generated one, shown in the details)</label>
<input id="reinstall-password" name="password" type="password" autocomplete="new-password" maxlength="128">
<label for="reinstall-keys">SSH public keys for root, one per line (optional; empty: the service keeps its keys)</label>
<textarea id="reinstall-keys" name="ssh_keys" rows="3" spellcheck="false"></textarea>
<div><button type="submit" class="danger">Reinstall</button></div>
</form>`;
}

/**
 * The root password: for an admin, a link that asks the operator API with `reveal=true` (an
 * audited read) and the password once it did; nothing for the other roles, which may not see it.
 */
function rootPassword(call: ConsoleCall, s: Details): Html | '' {
  if (!call.can('secret')) return '';
  if (s.password !== null && s.password !== undefined) {
    return html`<p>Root password: <span class="mono revealed-password">${s.password}</span></p>`;
  }
  return html`<p><a class="reveal-password" href="${serviceUrl(s.service_id)}?reveal=true">Reveal password</a> (the reveal is recorded in the audit log)</p>`;
}

/**
 * Reverse DNS: each address's PTR record, and a form per address to set it (empty: back to the
 * provider's default). Without a DNS server configured the operator API says so, and so does
 * the section.
 */
async function reverseDns(call: ConsoleCall, s: Details): Promise<Html> {
  let ptrs: AddressPtrs;
  try {
    ptrs = await call.ops.get<AddressPtrs>(`services/${s.service_id}/rdns`);
  } catch (err) {
    if (err instanceof OpsRefusal && err.code === 'rdns_unavailable')
      return html`<p class="empty">Reverse DNS is not configured on this server (VRP_PDNS_API_URL).</p>`;
    throw err;
  }
  const editable = s.projected_status !== 'terminated' && call.can('operate');
  return table(
    'PTR records of the service’s addresses',
    ['Address', 'PTR record', ''],
    ptrs.map((p, i) => {
      const form =
        editable &&
        html`<form method="post" action="${serviceUrl(s.service_id)}/rdns" class="inline">
${csrfField(call.csrf)}
<input type="hidden" name="ip" value="${p.ip}">
<input id="ptr-${i}" name="ptr" value="${p.ptr ?? ''}" maxlength="253" placeholder="empty: the default" aria-label="PTR record of ${p.ip}">
<button type="submit">Set</button>
</form>`;
      return html`<tr><td class="mono">${p.ip}</td><td class="mono">${p.ptr ?? html`<span class="none">none</span>`}</td><td>${form || ''}</td></tr>`;
    }),
    'No addresses yet.',
  );
}

/**
 * Moving the server to another host: a running or stopped service on a host, to one of the
 * active, answering hosts other than its own, or to the one the placement rule picks.
 */
async function migrateForm(call: ConsoleCall, s: Details): Promise<Html | ''> {
  if (!call.can('operate')) return '';
  if (!s.host || (s.projected_status !== 'running' && s.projected_status !== 'stopped')) return '';
  const hosts = await call.ops.get<Page<Host>>('hosts', { limit: 1000 });
  const here = s.host.host_id;
  const choices = hosts.items.filter((h) => h.host_id !== here && h.state === 'active' && h.health === 'up');
  return html`<section aria-labelledby="migrate-h">
  <h2 id="migrate-h">Migrate</h2>
  <form method="post" action="${serviceUrl(s.service_id)}/migrate" class="stack">
    ${csrfField(call.csrf)}
    <label for="migrate-host">Destination host</label>
    <select id="migrate-host" name="host_id">
      <option value="">any (the host with the most free RAM)</option>
      ${choices.map((h) => html`<option value="${h.host_id}">${h.name}</option>`)}
    </select>
    <p class="hint">A running server moves live and keeps running; a stopped one moves cold. It keeps its addresses.</p>
    <div><button type="submit">Migrate</button></div>
  </form>
</section>`;
}

/** The operations of the service's page, as forms that ask the operator API and come back here. */
function registerServiceActions(router: ConsoleRouter): void {
  const act = async (call: ConsoleCall, path: string, body: unknown, done: string) => {
    const id = pathParam(call, 'service_id');
    const answer = await call.ops.send('POST', `services/${id}/${path}`, body);
    return { redirect: serviceUrl(id), flash: { kind: 'ok' as const, text: answer.message || done } };
  };
  for (const b of BUTTONS) {
    router.action(`/services/:service_id/${b.path}`, (call) =>
      act(call, b.path, {}, `${b.label}: queued. This page shows its progress.`),
    );
  }
  // The link is made for this server (the operator API answers it with the address that API was
  // reached at, here an in-process one): the browser opens its path on the console's own origin.
  router.action('/services/:service_id/console', async (call) => {
    const id = pathParam(call, 'service_id');
    const link = await call.ops.send<{ url: string }>('POST', `services/${id}/console`, {});
    return { redirect: new URL(link.data.url).pathname };
  });
  // The rescue login is in the answer only: shown on the page that answers, never kept.
  router.action('/services/:service_id/rescue', async (call) => {
    const id = pathParam(call, 'service_id');
    const login = (await call.ops.send<RescueLogin>('POST', `services/${id}/rescue`, {})).data;
    const body = html`
<p><a href="${serviceUrl(id)}">← The service</a></p>
<section aria-labelledby="rescue-h">
  <h2 id="rescue-h">Rescue: queued</h2>
  <p>The server boots the rescue system; its own disk is its second disk. Log in over SSH or the console with:</p>
  <dl class="facts rescue-login">
    <dt>User</dt><dd class="mono">${login.username}</dd>
    <dt>Password</dt><dd class="mono">${login.password}</dd>
  </dl>
  <p class="hint">This password is shown only now. The rescue ends by itself after a while (the service page shows when), or with Leave rescue.</p>
</section>`;
    return sendPage(call.reply, call.render({ title: 'Rescue', section: 'services', body }));
  });
  router.action('/services/:service_id/rdns', (call) => {
    const ip = call.field('ip') ?? '';
    const ptr = call.field('ptr')?.trim() ?? '';
    return act(
      call,
      'rdns',
      { ip, ptr: ptr === '' ? null : ptr },
      ptr === ''
        ? `The PTR record of ${ip} is the default again.`
        : `The PTR record of ${ip} is ${ptr.toLowerCase()}.`,
    );
  });
  router.action('/services/:service_id/migrate', (call) => {
    const to = call.field('host_id')?.trim();
    return act(call, 'migrate', to ? { host_id: to } : {}, 'Migrate: queued. This page shows its progress.');
  });
  router.action('/services/:service_id/suspend', (call) => {
    const reason = call.field('suspend_reason')?.trim();
    return act(call, 'suspend', reason ? { suspend_reason: reason } : {}, 'Suspend: queued.');
  });
  router.action('/services/:service_id/reset-password', (call) =>
    // The API answers no password: it sets the one typed here, which is never shown again.
    act(
      call,
      'reset-password',
      { password: call.field('password') ?? '' },
      'New root password: queued. The server has it once the job has run.',
    ),
  );
  router.action('/services/:service_id/reinstall', (call) => {
    const password = call.field('password') ?? '';
    const keys = (call.field('ssh_keys') ?? '')
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '');
    return act(
      call,
      'reinstall',
      {
        template_id: call.field('template_id') ?? '',
        ...(password === '' ? {} : { password }),
        ...(keys.length === 0 ? {} : { ssh_keys: keys }),
      },
      'Reinstall: queued. This page shows its progress.',
    );
  });
  // Verify reads the backup back from the store now and says what it found.
  router.action('/services/:service_id/backups/:backup_id/verify', async (call) => {
    const id = pathParam(call, 'service_id');
    const report = (
      await call.ops.send<VerifyAnswer>('POST', `backups/${pathParam(call, 'backup_id')}/verify`, {})
    ).data;
    const bad = report.bad
      .map((b) =>
        b.segment < 0
          ? b.reason
          : `segment ${b.segment} (disk bytes ${b.offset}-${b.offset + b.length - 1}) ${b.reason}`,
      )
      .join('; ');
    return {
      redirect: serviceUrl(id),
      flash: report.ok
        ? {
            kind: 'ok' as const,
            text: `The backup is intact: its ${report.segments} segments read back and checked.`,
          }
        : { kind: 'error' as const, text: `The backup is damaged: ${bad}.` },
    };
  });
  for (const [verb, label] of [
    ['restore', 'Restore'],
    ['delete', 'Delete'],
  ] as const) {
    router.action(`/services/:service_id/backups/:backup_id/${verb}`, (call) =>
      act(
        call,
        `backup/${verb}/${pathParam(call, 'backup_id')}`,
        {},
        `${label} of the backup: queued. This page shows its progress.`,
      ),
    );
  }
}

/**
 * A service's page (`CONSOLE/services/ID`): its facts, its job timeline, its backups and the
 * operations it accepts now. While it has pending jobs the status, timeline and backups are a
 * live region (console.js fetches them again every LIVE_SECONDS), which stops once none is left.
 */
export function registerServicePage(router: ConsoleRouter): void {
  router.page('/services/:service_id', async (call) => {
    // The root password only when an admin asks for it (the API audits the reveal).
    const reveal = call.can('secret') && call.query('reveal') === 'true';
    const s = await call.ops.get<Details>(
      `services/${pathParam(call, 'service_id')}`,
      reveal ? { reveal: 'true' } : {},
    );
    const reseller = await call.ops.get<Reseller>(`resellers/${s.reseller_id}`);
    // A role that may not operate on services sees none of the operations' buttons and forms.
    const operate = call.can('operate');
    const allowed = new Set<string>(operate ? s.allowed_actions : []);
    const live = s.pending_jobs > 0;
    const body = html`
<p><a href="${CONSOLE}/services">← All services</a></p>
<div id="service-live"${live ? html` data-live="${LIVE_SECONDS}"` : ''}>
<section aria-labelledby="facts-h">
  <h2 id="facts-h">Service</h2>
  ${facts(s, reseller.name)}
  ${rootPassword(call, s)}
  ${live ? html`<p class="pending" role="status">Jobs are pending: this page updates by itself.</p>` : ''}
</section>
<section aria-labelledby="jobs-h">
  <h2 id="jobs-h">Job timeline</h2>
  ${timeline(s, call.csrf, operate)}
</section>
<section aria-labelledby="backups-h">
  <h2 id="backups-h">Backups</h2>
  ${backups(s, call.csrf, allowed, operate)}
</section>
<section aria-labelledby="suspensions-h">
  <h2 id="suspensions-h">Suspension history</h2>
  ${suspensions(s)}
</section>
</div>
${
  operate
    ? html`<section aria-labelledby="ops-h">
  <h2 id="ops-h">Operations</h2>
  ${operations(s, call.csrf, allowed)}
</section>`
    : ''
}
<section aria-labelledby="rdns-h">
  <h2 id="rdns-h">Reverse DNS</h2>
  ${await reverseDns(call, s)}
</section>
${await migrateForm(call, s)}`;
    return call.render({ title: s.domain_name, section: 'services', body });
  });
  registerServiceActions(router);
}
