import { existsSync, readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { type CatalogFile, CatalogFileError, parseCatalogFile } from '../domain/catalog-file.ts';
import { messageOf } from '../domain/errors.ts';
import { templatesNeedImages } from '../drivers/template-images.ts';
import { exportCatalog, importCatalog } from '../store/catalog-import.ts';
import type { Database } from '../store/schema.ts';
import { CommandError, type Output, positionals, UsageError } from './output.ts';

/** `vrp catalog import FILE.json|-` and `vrp catalog export` (docs/catalog.md). */
export async function catalogCommand(
  db: Kysely<Database>,
  args: string[],
  out: Output,
  config: Pick<Config, 'driver'>,
): Promise<void> {
  const [sub, file, ...rest] = positionals(args, 'catalog');
  if (rest.length > 0) throw new UsageError(`catalog: unexpected arguments: ${rest.join(' ')}`);
  if (sub === 'export' && file === undefined) {
    // Always JSON: the export is the file itself, with or without --json.
    process.stdout.write(`${JSON.stringify(await exportCatalog(db), null, 2)}\n`);
    return;
  }
  if (sub === 'import' && file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8'));
    } catch (err) {
      throw new CommandError(`cannot read ${file === '-' ? 'stdin' : file} as JSON: ${messageOf(err)}`);
    }
    let catalog: ReturnType<typeof parseCatalogFile>;
    try {
      catalog = parseCatalogFile(parsed);
    } catch (err) {
      if (!(err instanceof CatalogFileError)) throw err;
      throw new CommandError(`${err.message}\nnothing was changed`, { problems: err.problems });
    }
    const summary = await importCatalog(db, catalog, Date.now());
    if (templatesNeedImages(config)) {
      for (const w of imageWarnings(catalog)) process.stderr.write(`vrp: warning: ${w}\n`);
    }
    out.result(summary, (s) =>
      [
        `imported ${s.products} products, ${s.plans} plans, ${s.templates} OS templates`,
        ...(s.removed.length ? [`removed: ${s.removed.join(', ')}`] : []),
        ...(s.kept.length ? [`kept (services still use them): ${s.kept.join(', ')}`] : []),
        'running servers show the change within 5 seconds',
      ].join('\n'),
    );
    return;
  }
  throw new UsageError(
    sub === 'import'
      ? 'catalog import: a FILE.json (or - for stdin) is required'
      : `unknown command: catalog ${sub ?? ''}`,
  );
}

/**
 * Templates the libvirt driver cannot create VMs from, as seen from this machine: still
 * imported (the images may be on the hosts only, or be copied there next), but said.
 */
function imageWarnings(catalog: CatalogFile): string[] {
  return catalog.os_templates.flatMap((t) => {
    if (!t.image) return [`OS template "${t.name}" has no image: orders for it are refused`];
    if (!existsSync(t.image)) {
      return [`OS template "${t.name}": image ${t.image} does not exist on this machine`];
    }
    return [];
  });
}
