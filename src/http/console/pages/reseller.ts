import type { Static } from 'typebox';
import { BILLING_ID_MAX } from '../../../domain/billing-id.ts';
import { QUOTA_RESOURCES, type QuotaResource, quotaAmount } from '../../../domain/quotas.ts';
import { SCOPES } from '../../../domain/scopes.ts';
import { CONSOLE } from '../../base-path.ts';
import type {
  NewApplicationPayload,
  ResellerDetailsPayload,
  ResellerPayload,
} from '../../schemas/operator.ts';
import { badge, table, time, useBar } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField } from '../console-router.ts';
import { buttonForm, secretPage } from '../forms.ts';
import { html } from '../html.ts';

type Details = Static<typeof ResellerDetailsPayload>;
type Reseller = Static<typeof ResellerPayload>;
type NewApplication = Static<typeof NewApplicationPayload>;

/** How each quota resource is named on the page, and its unit. */
const RESOURCES: Readonly<Record<QuotaResource, { label: string; unit: string }>> = {
  services: { label: 'Services', unit: 'services' },
  cpu: { label: 'CPU', unit: 'vCores' },
  ram: { label: 'RAM', unit: 'GB' },
  hdd: { label: 'Disk', unit: 'GB' },
  ip: { label: 'IP addresses', unit: 'addresses' },
  backup: { label: 'Backup', unit: 'GB' },
};

function resellerPath(call: ConsoleCall): string {
  return encodeURIComponent(call.param('reseller_id'));
}

/**
 * A cap as the form gives it: empty is unlimited (null); a number goes as a number; anything else
 * goes as it was typed, so that the operator API refuses it with its own message (the console
 * holds no rule of its own).
 */
function capOf(text: string | undefined): number | string | null {
  const value = (text ?? '').trim();
  if (value === '') return null;
  return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
}

/** The cap inputs take any number: which ones are allowed is the API's rule, and its refusal says why. */
function quotaSection(call: ConsoleCall, r: Details) {
  const inputs = QUOTA_RESOURCES.map((key) => {
    const { label, unit } = RESOURCES[key];
    const cap = r.quota[key] ?? null;
    return html`<div class="field">
  <label for="quota-${key}">${label} (${unit})</label>
  <input id="quota-${key}" name="${key}" type="number" step="any" inputmode="numeric" value="${cap ?? ''}" placeholder="unlimited" aria-describedby="quota-hint">
</div>`;
  });
  return html`<section aria-labelledby="quota-h">
  <h2 id="quota-h">Quota</h2>
  <form method="post" action="${CONSOLE}/resellers/${r.reseller_id}/quota" class="quota">
    ${csrfField(call.csrf)}
    <p id="quota-hint" class="hint">Caps on the totals of the reseller’s servers that are not terminated. Leave a cap empty for no limit. Servers above a lowered cap stay; new orders and upgrades beyond it are refused.</p>
    <div class="quota-fields">${inputs}</div>
    <div><button type="submit">Save quota</button></div>
  </form>
</section>`;
}

/** The external billing id form: empty clears it; the API checks what it may hold. */
function billingIdSection(call: ConsoleCall, r: Details) {
  return html`<section aria-labelledby="billing-h">
  <h2 id="billing-h">Billing</h2>
  <form method="post" action="${CONSOLE}/resellers/${r.reseller_id}/billing-id" class="filters">
    ${csrfField(call.csrf)}
    <div><label for="billing-id">External billing id</label>
    <input id="billing-id" name="external_billing_id" maxlength="${BILLING_ID_MAX}" value="${r.external_billing_id ?? ''}" aria-describedby="billing-hint"></div>
    <div><button type="submit">Save billing id</button></div>
  </form>
  <p id="billing-hint" class="hint">The key your billing system knows this reseller by; it is on every line of the per-service usage CSV. Leave it empty to clear it.</p>
</section>`;
}

function useSection(r: Details) {
  const rows = QUOTA_RESOURCES.map((key) => {
    const { label, unit } = RESOURCES[key];
    const used = r.use[key] ?? 0;
    const cap = r.quota[key] ?? null;
    if (cap === null) {
      return html`<div class="use">
  <span class="use-label">${label}</span>
  <span class="use-figures use-unlimited">${quotaAmount(key, used)} in use, no limit</span>
</div>`;
    }
    return useBar(label, used, cap, unit);
  });
  return html`<section aria-labelledby="use-h">
  <h2 id="use-h">Use against the quota</h2>
  <div class="card use-card">${rows}</div>
</section>`;
}

type Application = Details['applications'][number];

function applicationButtons(call: ConsoleCall, r: Details, a: Application) {
  const base = `${CONSOLE}/resellers/${r.reseller_id}/applications/${encodeURIComponent(a.client_id)}`;
  const button = (verb: string, label: string, confirm: string, kind?: 'danger' | 'secondary') =>
    buttonForm({
      csrf: call.csrf,
      action: `${base}/${verb}`,
      label,
      name: `${label} ${a.name}`,
      confirm,
      ...(kind ? { kind } : {}),
    });
  return html`${button('rotate-secret', 'New secret', `Give ${a.name} a new secret? The old one and every token issued with it stop working at once.`, 'secondary')}
${button('revoke-tokens', 'Revoke tokens', `Revoke every token of ${a.name}? It must ask for new ones with its secret.`, 'secondary')}
${
  a.enabled
    ? button(
        'disable',
        'Disable',
        `Disable ${a.name}? Its tokens are revoked for good; it gets new ones once it is enabled again.`,
        'danger',
      )
    : button('enable', 'Enable', `Enable ${a.name}?`)
}`;
}

function applicationsSection(call: ConsoleCall, r: Details) {
  const manage = call.can('manage');
  const rows = r.applications.map(
    (a) => html`<tr><td>${a.name}</td><td class="mono">${a.client_id}</td><td>${a.scopes.join(', ')}</td>
<td>${a.variant}</td><td>${badge(a.enabled ? 'enabled' : 'disabled')}</td><td>${time(a.created_at)}</td>${manage ? html`<td>${applicationButtons(call, r, a)}</td>` : ''}</tr>`,
  );
  const scopes = SCOPES.map(
    (s) => html`<label><input type="checkbox" name="scope" value="${s}" checked> ${s}</label>`,
  );
  return html`<section aria-labelledby="apps-h">
  <h2 id="apps-h">Applications</h2>
  ${table(
    `Applications of ${r.name}`,
    ['Name', 'Client id', 'Scopes', 'Variant', 'State', 'Created', ...(manage ? [''] : [])],
    rows,
    'No applications yet.',
  )}
  ${
    manage
      ? html`<details><summary>Register an application</summary>
<form method="post" action="${CONSOLE}/resellers/${r.reseller_id}/applications" class="stack">
  ${csrfField(call.csrf)}
  <label for="app-name">Name (optional)</label><input id="app-name" name="name" maxlength="100" autocomplete="off">
  <fieldset><legend>Scopes</legend>${scopes}</fieldset>
  <label for="app-variant">Envelope variant</label>
  <select id="app-variant" name="variant"><option value="B">B</option><option value="A">A</option></select>
  <div><button type="submit">Register application</button></div>
</form></details>`
      : ''
  }
</section>`;
}

/** A new application's secret, shown once (secretPage). */
function applicationSecretPage(
  call: ConsoleCall,
  r: { reseller_id: string },
  a: { name: string; client_id: string; client_secret: string },
  what: string,
) {
  return secretPage(call, {
    title: `${what}: ${a.name}`,
    section: 'resellers',
    facts: [
      ['client_id', a.client_id, 'client-id'],
      ['client_secret', a.client_secret, 'client-secret'],
    ],
    back: { href: `${CONSOLE}/resellers/${r.reseller_id}`, text: 'Back to the reseller' },
  });
}

/**
 * `CONSOLE/resellers/:id`: a reseller's applications, its quota with a form to change it, its use
 * against the quota, its external billing id with a form to change it, and disable/enable.
 */
export function registerResellerPages(router: ConsoleRouter): void {
  router.page('/resellers/:reseller_id', async (call) => {
    const r = await call.ops.get<Details>(`resellers/${resellerPath(call)}`);
    const toggle = r.enabled
      ? html`<form method="post" action="${CONSOLE}/resellers/${r.reseller_id}/disable" data-confirm="Disable ${r.name}? The tokens of its applications are revoked for good; they get new ones once it is enabled again.">
  ${csrfField(call.csrf)}<button type="submit" class="danger">Disable reseller</button>
</form>`
      : html`<form method="post" action="${CONSOLE}/resellers/${r.reseller_id}/enable">
  ${csrfField(call.csrf)}<button type="submit">Enable reseller</button>
</form>`;
    const body = html`
<p><a href="${CONSOLE}/resellers">← All resellers</a></p>
<dl class="facts">
  <dt>State</dt><dd>${badge(r.enabled ? 'enabled' : 'disabled')}</dd>
  <dt>Reseller id</dt><dd class="mono">${r.reseller_id}</dd>
  <dt>Created</dt><dd>${time(r.created_at)}</dd>
  <dt>External billing id</dt><dd class="mono">${r.external_billing_id ?? '(none)'}</dd>
</dl>
${call.can('manage') ? html`<div class="actions">${toggle}</div>` : ''}
${useSection(r)}
${call.can('manage') ? quotaSection(call, r) : ''}
${call.can('bill') ? billingIdSection(call, r) : ''}
${applicationsSection(call, r)}
<p><a href="${CONSOLE}/audit?reseller_id=${r.reseller_id}">Audit entries about this reseller’s objects</a></p>`;
    return call.render({ title: `Reseller ${r.name}`, section: 'resellers', body });
  });

  router.action('/resellers/:reseller_id/quota', async (call) => {
    const id = resellerPath(call);
    const quota = Object.fromEntries(QUOTA_RESOURCES.map((key) => [key, capOf(call.field(key))]));
    await call.ops.send('PUT', `resellers/${id}/quota`, quota);
    return { redirect: `${CONSOLE}/resellers/${id}`, flash: { kind: 'ok', text: 'Quota saved.' } };
  });

  router.action('/resellers/:reseller_id/billing-id', async (call) => {
    const id = resellerPath(call);
    const given = (call.field('external_billing_id') ?? '').trim();
    await call.ops.send('PATCH', `resellers/${id}`, { external_billing_id: given === '' ? null : given });
    const text = given === '' ? 'External billing id cleared.' : 'External billing id saved.';
    return { redirect: `${CONSOLE}/resellers/${id}`, flash: { kind: 'ok', text } };
  });

  router.action('/resellers/:reseller_id/applications', async (call) => {
    const id = resellerPath(call);
    const raw = call.request.body;
    const given = typeof raw === 'object' && raw !== null && 'scope' in raw ? raw.scope : [];
    const scopes = (Array.isArray(given) ? given : [given]).filter((s) => typeof s === 'string');
    const name = (call.field('name') ?? '').trim();
    const { data } = await call.ops.send<NewApplication>('POST', `resellers/${id}/applications`, {
      ...(name === '' ? {} : { name }),
      scopes,
      variant: call.field('variant') ?? 'B',
    });
    return applicationSecretPage(call, { reseller_id: id }, data, 'Application registered');
  });

  router.action('/resellers/:reseller_id/applications/:client_id/rotate-secret', async (call) => {
    const id = resellerPath(call);
    const app = encodeURIComponent(call.param('client_id'));
    const { data } = await call.ops.send<NewApplication>(
      'POST',
      `resellers/${id}/applications/${app}/rotate-secret`,
    );
    return applicationSecretPage(call, { reseller_id: id }, data, 'New secret');
  });

  for (const [verb, done] of [
    ['disable', 'disabled'],
    ['enable', 'enabled'],
    ['revoke-tokens', 'has no valid token left'],
  ] as const) {
    router.action(`/resellers/:reseller_id/applications/:client_id/${verb}`, async (call) => {
      const id = resellerPath(call);
      const app = encodeURIComponent(call.param('client_id'));
      const { data } = await call.ops.send<Application>(
        'POST',
        `resellers/${id}/applications/${app}/${verb}`,
      );
      return {
        redirect: `${CONSOLE}/resellers/${id}`,
        flash: { kind: 'ok', text: `Application ${data.name} ${done}.` },
      };
    });
  }

  for (const verb of ['disable', 'enable'] as const) {
    router.action(`/resellers/:reseller_id/${verb}`, async (call) => {
      const id = resellerPath(call);
      const { data } = await call.ops.send<Reseller>('POST', `resellers/${id}/${verb}`);
      return {
        redirect: `${CONSOLE}/resellers/${id}`,
        flash: { kind: 'ok', text: `Reseller "${data.name}" ${verb}d.` },
      };
    });
  }
}
