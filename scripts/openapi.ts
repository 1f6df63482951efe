/**
 * Writes docs/openapi.json (the reseller API) and docs/openapi-operator.json (the operator API)
 * from the route schemas (`npm run openapi`); tests fail when either drifts.
 */
import { writeFileSync } from 'node:fs';
import { renderOpenApi, renderOperatorOpenApi } from '../test/helpers/openapi.ts';

writeFileSync(new URL('../docs/openapi.json', import.meta.url), await renderOpenApi());
console.log('docs/openapi.json written');
writeFileSync(new URL('../docs/openapi-operator.json', import.meta.url), await renderOperatorOpenApi());
console.log('docs/openapi-operator.json written');
