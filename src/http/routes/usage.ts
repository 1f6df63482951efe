import type { Static } from 'typebox';
import type { AppContext } from '../../context.ts';
import { UNLIMITED } from '../../domain/quotas.ts';
import { findQuota, quotaUse } from '../../store/repos/quotas.ts';
import { apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { applicationCaller } from '../plugins/authenticate.ts';
import { UsagePayload } from '../schemas/usage.ts';

export function registerUsageRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  app.get(
    `${API}/usage`,
    apiRoute('service', {
      operationId: 'usage',
      tags: ['Usage'],
      summary: "The reseller's quota and current use",
      description:
        'Per resource (services, cpu in vCores, ram, hdd and backup in GB, ip in addresses): the quota, ' +
        'null where unlimited, and the use, totals over the services that are not terminated (an upgrade ' +
        'still waiting counts at its new size where that is larger). Orders and upgrades beyond the quota ' +
        'answer 400 quota_exceeded.',
      response: { 200: UsagePayload },
    }),
    async (request): Promise<Static<typeof UsagePayload>> => {
      const resellerId = applicationCaller(request).resellerId;
      const [quota, use] = await Promise.all([findQuota(db, resellerId), quotaUse(db, resellerId)]);
      return { quota: quota ?? UNLIMITED, use };
    },
  );
}
