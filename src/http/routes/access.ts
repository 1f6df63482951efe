import type { AppContext } from '../../context.ts';
import type { App } from '../app.ts';
import { API } from '../base-path.ts';
import { successEnvelope } from '../envelope.ts';
import { EmptyBody } from '../schemas.ts';

export const API_VERSION = '2.0.0';

export function registerAccessRoutes(app: App, _ctx: AppContext): void {
  app.post(
    `${API}/test-connection`,
    { config: { scope: 'access' }, schema: { body: EmptyBody } },
    async (request) => successEnvelope(request.variant, [], 'Connection successful'),
  );
  app.get(`${API}/version`, { config: { scope: 'access' } }, async (request) =>
    successEnvelope(request.variant, { version: API_VERSION }),
  );
}
