import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { generatePassword } from '../../domain/passwords.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import type { App } from '../app-type.ts';
import { EmptyBody, EmptyList, ServiceParams } from '../schemas/common.ts';
import { JOB_HEADERS } from '../schemas/services.ts';
import { acceptOperation, JOB_ANSWER, RESELLER_DOOR, type ServiceDoor } from './service-actions.ts';

/** The rescue system's user: root, as the server's own login. */
const RESCUE_USER = 'root';

const RescueLoginPayload = Type.Object(
  {
    username: Type.String({ description: 'The rescue system’s user (`root`)' }),
    password: Type.String({
      description: 'A new random password for the rescue system only; shown once, in this answer',
    }),
  },
  { title: 'RescueLogin' },
);

export function registerRescueRoutes(app: App, ctx: AppContext): void {
  registerRescueActions(app, ctx, RESELLER_DOOR);
}

/**
 * Rescue and its end (docs/api.md#rescue), through `door`: the server boots a rescue system with
 * its own disk attached, for a customer who locked themselves out or broke its boot.
 */
export function registerRescueActions(app: App, ctx: AppContext, door: ServiceDoor): void {
  const { url } = door;
  const tags = [door.tag('Service actions')];

  app.post(
    url('rescue'),
    door.route(
      {
        operationId: door.operationId('rescue'),
        tags,
        summary: 'Boot the rescue system',
        description:
          'The server boots a rescue system with its own disk attached as the second disk (untouched until you mount it); status `rescuing`, then `rescue`. Answers the rescue system’s login, a new random password shown only here. A running or stopped service only (otherwise 400 `invalid_state`). The rescue ends by itself after VRP_RESCUE_MAX (details show `rescue_until`); `unrescue` ends it sooner. In rescue the service accepts `unrescue`, `suspend` and `terminate` only. Queued as a job like any operation, its id in `X-Job-Id`.',
        successHeaders: JOB_HEADERS,
        params: ServiceParams,
        body: EmptyBody,
        response: { 200: RescueLoginPayload },
      },
      'service.rescue',
    ),
    async (request, reply) => {
      // Only its seal goes into the job: the answer is the one place it is shown.
      const password = generatePassword(randomPoolBytes);
      await acceptOperation(
        ctx,
        request,
        reply,
        { action: 'rescue', params: { username: RESCUE_USER, password_enc: ctx.secretBox.seal(password) } },
        door,
      );
      return { username: RESCUE_USER, password };
    },
  );

  app.post(
    url('unrescue'),
    door.route(
      {
        operationId: door.operationId('unrescue'),
        tags,
        summary: 'Leave the rescue system',
        description:
          'The server boots its own system again (status `starting`, then `running`). A service in `rescue` only (otherwise 400 `invalid_state`).' +
          JOB_ANSWER,
        successHeaders: JOB_HEADERS,
        params: ServiceParams,
        body: EmptyBody,
        response: { 200: EmptyList },
      },
      'service.unrescue',
    ),
    (request, reply) =>
      acceptOperation(ctx, request, reply, { action: 'unrescue', params: { expired: false } }, door),
  );
}
