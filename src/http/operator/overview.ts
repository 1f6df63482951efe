import type { AppContext } from '../../context.ts';
import { STATUSES } from '../../domain/status-machine.ts';
import { countJobs } from '../../store/repos/job-list.ts';
import { countServicesByStatus } from '../../store/repos/service-list.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { OverviewPayload } from '../schemas/operator.ts';
import { operatorRoute } from './operator-route.ts';

const DAY_MS = 86_400_000;

/** `GET OPS/overview`: the counts a provider's dashboard starts from (the console's overview page). */
export function registerOperatorOverviewRoute(app: App, ctx: AppContext): void {
  const { db } = ctx.store;
  app.get(
    `${OPS}/overview`,
    operatorRoute({
      operationId: 'getOverview',
      tags: ['Operator'],
      summary: 'Services by status and jobs to look at',
      description:
        'How many services there are of each status, how many jobs are queued and running now, and how many failed in the last 24 hours (by their creation time).',
      response: { 200: OverviewPayload },
    }),
    async () => {
      const since = ctx.clock.now() - DAY_MS;
      const [byStatus, queued, running, failed] = await Promise.all([
        countServicesByStatus(db),
        countJobs(db, 'queued'),
        countJobs(db, 'running'),
        countJobs(db, 'failed', since),
      ]);
      return {
        services: Object.fromEntries(STATUSES.map((s) => [s, byStatus.get(s) ?? 0])),
        jobs: { queued, running, failed_last_24h: failed },
      };
    },
  );
}
