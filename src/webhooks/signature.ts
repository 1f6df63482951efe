import { createHmac } from 'node:crypto';
import { randomPoolBytes } from '../random-pool.ts';

const PREFIX = 'whsec_';

/** A new webhook secret as the Standard Webhooks libraries take it: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return PREFIX + randomPoolBytes(32).toString('base64');
}

/**
 * The `webhook-signature` header of a message (Standard Webhooks): `v1,` + base64 of
 * HMAC-SHA256 over `id.timestamp.body`, keyed with the secret's decoded bytes.
 */
export function signMessage(secret: string, id: string, timestampSeconds: number, body: string): string {
  if (!secret.startsWith(PREFIX)) throw new Error('not a webhook secret');
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}
