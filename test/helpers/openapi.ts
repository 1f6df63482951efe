import { OPS } from '../../src/http/base-path.ts';
import { buildOpenApi } from '../../src/http/openapi.ts';
import { createTestApp } from './app.ts';

/** The OpenAPI document of the reseller API as committed in docs/openapi.json (the operator API's routes are not in it). */
export async function renderOpenApi(): Promise<string> {
  const t = await createTestApp({}, { demo: false });
  try {
    const resellerRoutes = t.app.registeredRoutes.filter((r) => !r.url.startsWith(OPS));
    return `${JSON.stringify(buildOpenApi(resellerRoutes), null, 2)}\n`;
  } finally {
    await t.close();
  }
}
