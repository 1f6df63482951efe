import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  MAX_DELIVERY_ATTEMPTS,
  RETRY_DELAYS_MS,
  retryDelayMs,
} from '../../src/domain/webhook-retry-schedule.ts';
import { newWebhookSecret, signMessage } from '../../src/webhooks/signature.ts';

test('signatures are those of the Standard Webhooks reference library, over id.timestamp.body', () => {
  const secret = newWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.notEqual(newWebhookSecret(), secret);
  const id = '0190c7a8-1234-7000-8000-000000000001';
  const body = '{"type":"job.finished","timestamp":"2026-11-23T10:00:00.000Z","data":{"x":"é"}}';
  const seconds = Math.floor(Date.now() / 1000);
  const ours = signMessage(secret, id, seconds, body);
  assert.equal(ours, new Webhook(secret).sign(id, new Date(seconds * 1000), body));
  const headers = { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': ours };
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  // Any change to the id, the time or the body breaks it.
  assert.throws(() => new Webhook(secret).verify(body.replace('é', 'e'), headers), /No matching signature/);
  assert.throws(
    () => new Webhook(secret).verify(body, { ...headers, 'webhook-id': `${id.slice(0, -1)}2` }),
    /No matching signature/,
  );
  assert.throws(() => signMessage('not-a-secret', id, seconds, body), /not a webhook secret/);
});

test('the retry schedule: 8 attempts over more than 24 hours, then none', () => {
  assert.equal(MAX_DELIVERY_ATTEMPTS, 8);
  assert.deepEqual(
    Array.from({ length: 8 }, (_, i) => retryDelayMs(i + 1)),
    [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, undefined],
  );
  const total = RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
  assert.ok(total >= 24 * 3_600_000, `${total} ms`);
});
