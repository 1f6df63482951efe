/**
 * `npm run sdk:types` (from the root): writes client/src/generated/openapi.ts from docs/openapi.json
 * with openapi-typescript, formatted as the repository formats code, so that the checked-in file
 * is exactly what this produces; test/client/types-drift.test.ts fails when they differ.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const root = new URL('../../', import.meta.url);
/** Where the generated types live, relative to the repository root. */
export const GENERATED_PATH = 'client/src/generated/openapi.ts';

const HEADER = `/**
 * Generated from docs/openapi.json by openapi-typescript (\`npm run sdk:types\`); do not edit.
 * test/client/types-drift.test.ts fails when this file differs from what the generator writes.
 */

`;

/** The generated types for the document as it is now, as the file should read. */
export async function renderTypes(): Promise<string> {
  const document = JSON.parse(readFileSync(new URL('docs/openapi.json', root), 'utf8'));
  const text = HEADER + astToString(await openapiTS(document));
  // Biome formats by the file's path under the repository's biome.json, reading stdin.
  const biome = fileURLToPath(new URL('node_modules/@biomejs/biome/bin/biome', root));
  const formatted = spawnSync(process.execPath, [biome, 'format', `--stdin-file-path=${GENERATED_PATH}`], {
    cwd: fileURLToPath(root),
    input: text,
    encoding: 'utf8',
  });
  if (formatted.status !== 0) throw new Error(`biome format failed: ${formatted.stderr}`);
  return formatted.stdout;
}

if (import.meta.main) {
  writeFileSync(new URL(GENERATED_PATH, root), await renderTypes());
  console.log(`${GENERATED_PATH} written`);
}
