/**
 * Operators for tests of the operator API: `operatorToken(t)` is a bearer token with the scope
 * `operator`, got the way an operator's script gets one (its client credentials at the token
 * endpoint), for a new operator or a given one.
 */
import { type CreatedOperator, createOperator } from '../../src/auth/operators.ts';
import { OPS } from '../../src/http/base-path.ts';
import { BASE, call, type TestApp } from './app.ts';
import { TEST_PASSWORD_COST } from './secret-cost.ts';

export { OPS };

let operators = 0;

/**
 * A new operator (named `ops-N` unless `name` is given) with its client credentials: its secret
 * hashed at the app's cost (ctx.secretCost, as its applications'), its password at TEST_PASSWORD_COST.
 */
export async function createTestOperator(
  t: TestApp,
  options: { name?: string; password?: string; role?: string } = {},
): Promise<CreatedOperator> {
  operators += 1;
  return createOperator(
    t.ctx.store.db,
    {
      name: options.name ?? `ops-${operators}`,
      password: options.password,
      ...(options.role === undefined ? {} : { role: options.role }),
      secretCost: t.ctx.secretCost,
      passwordCost: TEST_PASSWORD_COST,
    },
    Date.now(),
  );
}

/** A bearer token of a new operator, or of `operator` (from createTestOperator). */
export async function operatorToken(t: TestApp, operator?: CreatedOperator): Promise<string> {
  const o = operator ?? (await createTestOperator(t));
  const res = await t.app.inject({
    method: 'POST',
    url: `${BASE}/oauth/token`,
    payload: { grant_type: 'client_credentials', client_id: o.client_id, client_secret: o.client_secret },
  });
  if (res.statusCode !== 200) throw new Error(`operator token request failed: ${res.statusCode} ${res.body}`);
  return res.json().access_token as string;
}

/** An operator API call through the app, with the token, as JSON; returns status, headers and parsed body. */
export function opsCall(
  t: TestApp,
  token: string,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): ReturnType<typeof call> {
  return call(t, token, method, path.startsWith('/') ? path : `${OPS}/${path}`, body, headers);
}
