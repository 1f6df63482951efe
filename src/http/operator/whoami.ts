import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ROLES } from '../../domain/roles.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { operatorCaller } from '../plugins/authenticate.ts';
import { StringEnum } from '../schemas/common.ts';
import { operatorRoute } from './operator-route.ts';

const WhoamiPayload = Type.Object({
  operator: Type.String(),
  role: StringEnum(ROLES, { description: 'What the operator may do (docs/operator-api.md#roles)' }),
});

/** `GET OPS/whoami`: the operator the token belongs to; a first call for a script or console to check its credentials. */
export function registerWhoamiRoute(app: App, _ctx: AppContext): void {
  app.get(
    `${OPS}/whoami`,
    operatorRoute({
      operationId: 'whoami',
      tags: ['Operator'],
      summary: 'The operator of the token',
      description:
        'The name and role of the operator the token belongs to: a first call to check credentials.',
      response: { 200: WhoamiPayload },
    }),
    async (request) => {
      const { operatorName, role } = operatorCaller(request);
      return { operator: operatorName, role };
    },
  );
}
