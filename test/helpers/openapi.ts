import { buildOpenApi, isOperatorRoute } from '../../src/http/openapi.ts';
import { createTestApp } from './app.ts';

/** The OpenAPI document of the reseller API as committed in docs/openapi.json (the operator API's routes are not in it). */
export async function renderOpenApi(): Promise<string> {
  const t = await createTestApp({}, { demo: false });
  try {
    const resellerRoutes = t.app.registeredRoutes.filter((r) => !isOperatorRoute(r));
    return `${JSON.stringify(buildOpenApi(resellerRoutes), null, 2)}\n`;
  } finally {
    await t.close();
  }
}

/** The OpenAPI document of the operator API as committed in docs/openapi-operator.json. */
export async function renderOperatorOpenApi(): Promise<string> {
  const t = await createTestApp({}, { demo: false });
  try {
    const operatorRoutes = t.app.registeredRoutes.filter(isOperatorRoute);
    return `${JSON.stringify(buildOpenApi(operatorRoutes, 'operator'), null, 2)}\n`;
  } finally {
    await t.close();
  }
}
