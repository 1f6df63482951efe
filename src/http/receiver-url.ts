import type { AppContext } from '../context.ts';
import { ApiError } from '../domain/errors.ts';
import { parseWebhookUrl, resolveTarget, TargetRefused } from '../webhooks/target.ts';

/**
 * The receiver URL of a new webhook (a reseller's or an operator's), refused (400
 * validation_failed, naming `body.url`) unless it is http(s) and, unless the operator allows
 * private receivers, its host resolves to public addresses only. Delivery checks the resolved
 * address again each time (webhooks/target.ts).
 */
export async function receiverUrl(ctx: AppContext, raw: string): Promise<string> {
  try {
    const url = parseWebhookUrl(raw);
    if (!ctx.config.webhookAllowPrivate) await resolveTarget(url, ctx.lookup, false);
    return url.href;
  } catch (err) {
    if (err instanceof TargetRefused) throw new ApiError('validation_failed', `body.url: ${err.message}`);
    throw err;
  }
}
