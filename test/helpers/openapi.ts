import { buildOpenApi } from '../../src/http/openapi.ts';
import { resellerApiRoutes } from '../../src/http/plugins/openapi-routes.ts';
import { createTestApp } from './app.ts';

/** The OpenAPI document of the reseller API as committed in docs/openapi.json (the operator API's routes are not in it). */
export async function renderOpenApi(): Promise<string> {
  const t = await createTestApp({}, { demo: false });
  try {
    return `${JSON.stringify(buildOpenApi(resellerApiRoutes(t.app.registeredRoutes)), null, 2)}\n`;
  } finally {
    await t.close();
  }
}
