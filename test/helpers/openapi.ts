import { buildOpenApi } from '../../src/http/openapi.ts';
import { createTestApp } from './app.ts';

/** The OpenAPI document as committed in docs/openapi.json. */
export async function renderOpenApi(): Promise<string> {
  const t = await createTestApp({}, { demo: false });
  try {
    return `${JSON.stringify(buildOpenApi(t.app.registeredRoutes), null, 2)}\n`;
  } finally {
    await t.close();
  }
}
