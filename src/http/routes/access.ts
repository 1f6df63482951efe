import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { answerMessage, apiRoute } from '../api-route.ts';
import type { App } from '../app-type.ts';
import { API } from '../base-path.ts';
import { EmptyBody, EmptyList } from '../schemas/common.ts';

export const API_VERSION = '2.0.0';

const Version = Type.Object({ version: Type.String({ examples: [API_VERSION] }) }, { title: 'Version' });

export function registerAccessRoutes(app: App, _ctx: AppContext): void {
  app.post(
    `${API}/test-connection`,
    apiRoute('access', {
      operationId: 'testConnection',
      tags: ['Access'],
      summary: 'Check the credentials',
      description:
        'Answers `[]` with the message "Connection successful" when the token is valid and has the scope `access`.',
      body: EmptyBody,
      response: { 200: EmptyList },
    }),
    async (_request, reply) => {
      answerMessage(reply, 'Connection successful');
      return [];
    },
  );
  app.get(
    `${API}/version`,
    apiRoute('access', {
      operationId: 'version',
      tags: ['Access'],
      summary: 'The API version',
      description: 'The version of the interface this server implements.',
      response: { 200: Version },
    }),
    async () => ({ version: API_VERSION }),
  );
}
