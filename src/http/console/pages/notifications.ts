import type { Static } from 'typebox';
import { NOTIFICATION_KINDS } from '../../../domain/notifications.ts';
import { MAX_URL_LENGTH } from '../../../webhooks/target.ts';
import { CONSOLE } from '../../base-path.ts';
import type {
  CreatedOperatorWebhookPayload,
  NotificationPayload,
  OperatorWebhookPayload,
} from '../../schemas/notifications.ts';
import { table, time } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField } from '../console-router.ts';
import { buttonForm, pathParam, secretPage, selectField } from '../forms.ts';
import { html } from '../html.ts';

type Notification = Static<typeof NotificationPayload>;
type Webhook = Static<typeof OperatorWebhookPayload>;
type CreatedWebhook = Static<typeof CreatedOperatorWebhookPayload>;

/** How many notifications the page lists (the API keeps 30 days of them). */
const SHOWN = 100;
const PAGE = `${CONSOLE}/notifications`;

function webhookRow(call: ConsoleCall, w: Webhook) {
  const failing =
    w.failed_attempts > 0
      ? html`${w.failed_attempts} failed${w.last_error ? html`: <span class="mono">${w.last_error}</span>` : ''}`
      : html`<span class="none">—</span>`;
  return html`<tr id="webhook-${w.webhook_id}">
  <th scope="row" class="mono">${w.url}</th>
  <td>${time(w.created_at)}</td>
  <td>${time(w.last_sent_at)}</td>
  <td>${failing}</td>${
    call.can('manage')
      ? html`
  <td>${buttonForm({
    csrf: call.csrf,
    action: `${PAGE}/webhooks/${w.webhook_id}/delete`,
    label: 'Remove',
    name: `Remove ${w.url}`,
    kind: 'danger',
    confirm: `Remove the webhook ${w.url}? Nothing more is sent to it.`,
  })}</td>`
      : ''
  }
</tr>`;
}

function webhooksSection(call: ConsoleCall, hooks: readonly Webhook[]) {
  const manage = call.can('manage');
  return html`<section aria-labelledby="webhooks-h">
  <h2 id="webhooks-h">Operator webhooks</h2>
  <p class="hint">Each batch of notifications is POSTed to these addresses, signed with each one’s secret (Standard Webhooks).</p>
  ${table(
    'Operator webhooks',
    ['URL', 'Created', 'Last sent', 'Failures', ...(manage ? [''] : [])],
    hooks.map((w) => webhookRow(call, w)),
    'No operator webhooks.',
  )}
  ${
    manage
      ? html`<form method="post" action="${PAGE}/webhooks" class="filters" aria-label="Add an operator webhook">
    ${csrfField(call.csrf)}
    <div><label for="webhook-url">Webhook URL</label>
    <input id="webhook-url" name="url" type="url" required maxlength="${MAX_URL_LENGTH}" autocomplete="off" placeholder="https://ops.example.com/hooks/vrp"></div>
    <div><button type="submit">Add webhook</button></div>
  </form>`
      : ''
  }
</section>`;
}

/**
 * `CONSOLE/notifications`: what was notified to the operators lately, newest first, with a filter
 * by kind; and the operators' webhooks, with a form to add one (its secret shown once) and removal.
 */
export function registerNotificationsPage(router: ConsoleRouter): void {
  router.page('/notifications', async (call) => {
    const kind = call.query('kind');
    const [notes, hooks] = await Promise.all([
      call.ops.get<Notification[]>('notifications', { kind, limit: SHOWN }),
      call.ops.get<Webhook[]>('webhooks'),
    ]);
    const body = html`
<form method="get" action="${PAGE}" class="filters" role="search" aria-label="Notifications">
  ${selectField({
    id: 'kind',
    label: 'Kind',
    any: 'Any kind',
    options: NOTIFICATION_KINDS.map((k) => [k, k]),
    selected: kind,
  })}
  <button type="submit">Show</button>
  ${kind ? html`<a href="${PAGE}">Clear</a>` : ''}
</form>
${table(
  `Notifications${kind ? ` of kind ${kind}` : ''}, newest first`,
  ['When', 'Kind', 'Summary', 'Sent'],
  notes.map(
    (n) => html`<tr>
<td>${time(n.created_at)}</td>
<td class="mono">${n.kind}</td>
<td>${n.summary}</td>
<td>${n.batch === null ? html`<span class="none">not yet</span>` : `batch ${n.batch}`}</td>
</tr>`,
  ),
  kind ? 'No notification of this kind.' : 'No notifications.',
)}
<p class="hint">The latest ${SHOWN}; notifications are kept 30 days.</p>
${webhooksSection(call, hooks)}`;
    return call.render({ title: 'Notifications', section: 'notifications', body });
  });

  router.action('/notifications/webhooks', async (call) => {
    const { data } = await call.ops.send<CreatedWebhook>('POST', 'webhooks', {
      url: (call.field('url') ?? '').trim(),
    });
    return secretPage(call, {
      title: 'Operator webhook added',
      section: 'notifications',
      facts: [
        ['URL', data.url, 'webhook-url'],
        ['Secret', data.secret, 'webhook-secret'],
      ],
      back: { href: PAGE, text: 'Back to the notifications' },
    });
  });

  router.action('/notifications/webhooks/:webhook_id/delete', async (call) => {
    await call.ops.send('POST', `webhooks/${pathParam(call, 'webhook_id')}/delete`);
    return { redirect: PAGE, flash: { kind: 'ok', text: 'Operator webhook removed.' } };
  });
}
