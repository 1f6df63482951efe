import { randomUUID } from 'node:crypto';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { EVENT_TYPES, MAX_WEBHOOKS_PER_RESELLER } from '../../domain/events.ts';
import { recordAudit } from '../../store/repos/audit.ts';
import {
  deleteWebhook,
  insertWebhook,
  listWebhooks,
  lockResellerForWebhooks,
  type Webhook,
} from '../../store/repos/webhooks.ts';
import { newWebhookSecret } from '../../webhooks/signature.ts';
import { MAX_URL_LENGTH } from '../../webhooks/target.ts';
import { answerMessage, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { notFound, pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { receiverUrl } from '../receiver-url.ts';
import { EmptyBody, EmptyList, InputId, Nullable, StringEnum } from '../schemas/common.ts';

const WebhookFields = {
  webhook_id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Nullable(Type.Array(StringEnum(EVENT_TYPES)), {
    description:
      'The types it receives; null when registered without `events`: every type, also types added later',
  }),
  created_at: Type.String({ format: 'date-time' }),
};

const WebhookPayload = Type.Object(WebhookFields);

/** A new webhook: the only answer that shows its secret. */
const CreatedWebhookPayload = Type.Object({
  ...WebhookFields,
  secret: Type.String({ description: '`whsec_` + base64 of 32 random bytes; shown once' }),
});

function webhookView(w: Webhook): Static<typeof WebhookPayload> {
  return {
    webhook_id: w.id,
    url: w.url,
    events: w.eventTypes === null ? null : [...w.eventTypes],
    created_at: new Date(w.createdAt).toISOString(),
  };
}

const WebhookBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH }),
  events: Type.Optional(Type.Array(StringEnum(EVENT_TYPES), { minItems: 1, uniqueItems: true })),
});
const WebhookParams = Type.Object({ webhook_id: InputId('The webhook') });

/**
 * A reseller's webhooks (at most 10), each signed with its own secret
 * (docs/design/contract.md#events-and-webhooks).
 */
export function registerWebhookRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  app.post(
    `${API}/webhooks`,
    apiRoute(
      'service',
      {
        operationId: 'createWebhook',
        tags: ['Webhooks'],
        summary: 'Register a webhook',
        description:
          'Events of the types listed in `events` (all types when absent) are POSTed to `url`, signed per ' +
          'the Standard Webhooks specification with `secret`, which this answer alone shows. `url` is ' +
          'http(s) on a public address, on port 80, 443 or 1024-65535. At most 10 webhooks per reseller ' +
          '(400 webhook_limit_reached).',
        body: WebhookBody,
        response: { 200: CreatedWebhookPayload },
      },
      'webhook.create',
    ),
    async (request) => {
      const resellerId = applicationCaller(request).resellerId;
      const url = await receiverUrl(ctx, request.body.url);
      const secret = newWebhookSecret();
      const audit = auditContext(request);
      const hook = await db.transaction().execute(async (tx) => {
        // Under the reseller's lock: concurrent registrations cannot pass the cap together.
        await lockResellerForWebhooks(tx, resellerId);
        if ((await listWebhooks(tx, resellerId)).length >= MAX_WEBHOOKS_PER_RESELLER) {
          throw new ApiError(
            'webhook_limit_reached',
            `A reseller has at most ${MAX_WEBHOOKS_PER_RESELLER} webhooks; delete one first`,
          );
        }
        const now = ctx.clock.now();
        const created = await insertWebhook(tx, {
          id: randomUUID(),
          resellerId,
          url,
          eventTypes: request.body.events ?? null,
          secretEnc: ctx.secretBox.seal(secret),
          now,
        });
        await recordAudit(tx, audit, { target: { type: 'webhook', id: created.id }, resellerId }, now);
        return created;
      });
      return { ...webhookView(hook), secret };
    },
  );

  app.get(
    `${API}/webhooks`,
    apiRoute('service', {
      operationId: 'webhooks',
      tags: ['Webhooks'],
      summary: "List the reseller's webhooks",
      description: 'Oldest first, without their secrets.',
      response: { 200: Type.Array(WebhookPayload) },
    }),
    async (request) => (await listWebhooks(db, applicationCaller(request).resellerId)).map(webhookView),
  );

  app.post(
    `${API}/webhooks/:webhook_id/delete`,
    apiRoute(
      'service',
      {
        operationId: 'deleteWebhook',
        tags: ['Webhooks'],
        summary: 'Delete a webhook',
        description:
          "Nothing more is sent to it, retries included. Another reseller's webhook is 404 webhook_not_found.",
        params: WebhookParams,
        body: EmptyBody,
        response: { 200: EmptyList },
      },
      'webhook.delete',
    ),
    async (request, reply) => {
      const id = pathId(request.params.webhook_id, 'webhook_not_found');
      const { resellerId } = applicationCaller(request);
      if (!(await deleteWebhook(db, resellerId, id, auditContext(request), ctx.clock.now()))) {
        throw notFound('webhook_not_found');
      }
      if (request.variant === 'A') answerMessage(reply, 'Webhook deleted');
      return [];
    },
  );
}
