import { Type } from 'typebox';
import { NOTIFICATION_KINDS } from '../../domain/notifications.ts';
import { MAX_URL_LENGTH } from '../../webhooks/target.ts';
import { Nullable, StringEnum } from './common.ts';

const OperatorWebhookFields = {
  webhook_id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  last_sent_at: Nullable(Type.String({ format: 'date-time' }), {
    description: 'When a message last reached it; null: none yet',
  }),
  failed_attempts: Type.Integer({
    description: 'Attempts that failed since the last message that reached it',
  }),
  last_error: Nullable(Type.String(), {
    description: 'What the last failed attempt got; null after a success',
  }),
};

/** An operator webhook, without its secret. */
export const OperatorWebhookPayload = Type.Object(OperatorWebhookFields);

/** A new operator webhook: the only answer that shows its secret. */
export const CreatedOperatorWebhookPayload = Type.Object({
  ...OperatorWebhookFields,
  secret: Type.String({ description: '`whsec_` + base64 of 32 random bytes; shown once' }),
});

export const OperatorWebhookBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH }),
});

export const NotificationPayload = Type.Object({
  notification_id: Type.String({ format: 'uuid' }),
  kind: StringEnum(NOTIFICATION_KINDS),
  subject: Type.String({
    description: "The id of what it is about: a job's, host's, reseller's or webhook's",
  }),
  summary: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  created_at: Type.String({ format: 'date-time' }),
  batch: Nullable(Type.Integer(), {
    description: 'The batch it was sent in; null until the next flush takes it',
  }),
});

export const NotificationQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 500, description: 'How many, newest first (1 to 500, default 50)' }),
  ),
  kind: Type.Optional(StringEnum(NOTIFICATION_KINDS)),
});
