/** Writes docs/openapi.json from the route schemas (`npm run openapi`); a test fails when it drifts. */
import { writeFileSync } from 'node:fs';
import { renderOpenApi } from '../test/helpers/openapi.ts';

writeFileSync(new URL('../docs/openapi.json', import.meta.url), await renderOpenApi());
console.log('docs/openapi.json written');
