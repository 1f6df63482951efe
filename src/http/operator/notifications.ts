import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { uuidv7 } from '../../domain/ids.ts';
import type { Notification } from '../../domain/notifications.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import { recentNotifications } from '../../store/repos/notifications.ts';
import {
  createOperatorWebhook,
  deleteOperatorWebhook,
  listOperatorWebhooks,
  MAX_OPERATOR_WEBHOOKS,
  type OperatorWebhookView,
} from '../../store/repos/operator-webhooks.ts';
import { newWebhookSecret } from '../../webhooks/signature.ts';
import { answerMessage } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { notFound, pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { receiverUrl } from '../receiver-url.ts';
import { EmptyList, InputId } from '../schemas/common.ts';
import {
  CreatedOperatorWebhookPayload,
  NotificationPayload,
  NotificationQuery,
  OperatorWebhookBody,
  OperatorWebhookPayload,
} from '../schemas/notifications.ts';
import { operatorRoute } from './operator-route.ts';

const iso = (ms: number) => new Date(ms).toISOString();

function webhookView(w: OperatorWebhookView): Static<typeof OperatorWebhookPayload> {
  return {
    webhook_id: w.id,
    url: w.url,
    created_at: iso(w.createdAt),
    last_sent_at: w.lastSentAt === null ? null : iso(w.lastSentAt),
    failed_attempts: w.failedAttempts,
    last_error: w.lastError,
  };
}

function notificationView(n: Notification): Static<typeof NotificationPayload> {
  return {
    notification_id: n.id,
    kind: n.kind,
    subject: n.subject,
    summary: n.summary,
    data: { ...n.data },
    created_at: iso(n.createdAt),
    batch: n.batch,
  };
}

const WebhookParams = Type.Object({ webhook_id: InputId('The operator webhook') });
const tags = ['Notifications'];

/**
 * `OPS/webhooks...`: the operators' own webhooks, which receive the notification batches
 * (Standard Webhooks, signed with each one's secret), and `OPS/notifications`, what was notified
 * lately (docs/operator-api.md#notifications).
 */
export function registerOperatorNotificationRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  app.get(
    `${OPS}/webhooks`,
    operatorRoute(
      {
        operationId: 'listOperatorWebhooks',
        tags,
        summary: "List the operators' webhooks",
        description: 'Oldest first, without their secrets, with how sending to each goes.',
        response: { 200: Type.Array(OperatorWebhookPayload) },
      },
      undefined,
      'read',
    ),
    async () => (await listOperatorWebhooks(db)).map(webhookView),
  );

  app.post(
    `${OPS}/webhooks`,
    operatorRoute(
      {
        operationId: 'createOperatorWebhook',
        tags,
        summary: 'Add an operator webhook',
        description:
          'Notification batches are POSTed to `url`, signed per the Standard Webhooks specification with ' +
          '`secret`, which this answer alone shows; it receives what is notified from now on. `url` is ' +
          "http(s) on a public address, on port 80, 443 or 1024-65535 (the rule of the resellers' webhooks; " +
          `VRP_WEBHOOK_ALLOW_PRIVATE lifts it), else 400 \`validation_failed\`. At most ${MAX_OPERATOR_WEBHOOKS} ` +
          '(400 `webhook_limit_reached`).',
        body: OperatorWebhookBody,
        response: { 200: CreatedOperatorWebhookPayload },
      },
      'operator_webhook.create',
      'manage',
    ),
    async (request) => {
      const url = await receiverUrl(ctx, request.body.url);
      const secret = newWebhookSecret();
      const now = ctx.clock.now();
      const hook = await createOperatorWebhook(
        db,
        { id: uuidv7(Date.now(), randomPoolBytes(16)), url, secretEnc: ctx.secretBox.seal(secret) },
        auditContext(request),
        now,
      );
      return { ...webhookView(hook), secret };
    },
  );

  app.post(
    `${OPS}/webhooks/:webhook_id/delete`,
    operatorRoute(
      {
        operationId: 'deleteOperatorWebhook',
        tags,
        summary: 'Remove an operator webhook',
        description:
          'Nothing more is sent to it, retries included. An unknown id is 404 `webhook_not_found`.',
        params: WebhookParams,
        response: { 200: EmptyList },
      },
      'operator_webhook.delete',
      'manage',
    ),
    async (request, reply) => {
      const id = pathId(request.params.webhook_id, 'webhook_not_found');
      if (!(await deleteOperatorWebhook(db, id, auditContext(request), ctx.clock.now())))
        throw notFound('webhook_not_found');
      answerMessage(reply, 'Operator webhook removed');
      return [];
    },
  );

  app.get(
    `${OPS}/notifications`,
    operatorRoute(
      {
        operationId: 'listNotifications',
        tags,
        summary: 'List recent notifications',
        description:
          'What was notified to the operators, newest first: jobs failed after their last attempt, hosts ' +
          'unreachable or over 90 % of a resource, resellers at 90 % of a quota, webhooks failing for a ' +
          'day, and the end of each lasting condition. `batch` is null until the next flush sends it. ' +
          'Kept 30 days.',
        querystring: NotificationQuery,
        response: { 200: Type.Array(NotificationPayload) },
      },
      undefined,
      'read',
    ),
    async (request) =>
      (await recentNotifications(db, { limit: request.query.limit ?? 50, kind: request.query.kind })).map(
        notificationView,
      ),
  );
}
