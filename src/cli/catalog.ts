import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import { CatalogFileError, parseCatalogFile } from '../domain/catalog-file.ts';
import { exportCatalog, importCatalog } from '../store/catalog-import.ts';
import type { Database } from '../store/schema.ts';
import { CommandError, type Output, UsageError } from './output.ts';

export async function catalogCommand(db: Kysely<Database>, args: string[], out: Output): Promise<void> {
  const [sub, file, ...rest] = args;
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  if (sub === 'export' && file === undefined) {
    process.stdout.write(`${JSON.stringify(await exportCatalog(db), null, 2)}\n`);
    return;
  }
  if (sub === 'import' && file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new CommandError(`cannot read ${file} as JSON: ${(err as Error).message}`);
    }
    try {
      const summary = await importCatalog(db, parseCatalogFile(parsed), Date.now());
      out.result(summary, (s) =>
        [
          `imported ${s.products} products, ${s.plans} plans, ${s.templates} OS templates`,
          ...(s.removed.length ? [`removed: ${s.removed.join(', ')}`] : []),
          ...(s.kept.length ? [`kept (services still use them): ${s.kept.join(', ')}`] : []),
        ].join('\n'),
      );
    } catch (err) {
      if (err instanceof CatalogFileError) throw new CommandError(`${err.message}\nnothing was changed`);
      throw err;
    }
    return;
  }
  throw new UsageError(`usage: vrp catalog import FILE.json | vrp catalog export`);
}
