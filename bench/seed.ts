/**
 * Fast seeding of the bench's store, straight into the SQLite file (the server must not be
 * writing to it), or into the PostgreSQL database (seedServicesPg): `n` running services of one reseller, in multi-row INSERTs of one prepared
 * statement, in one transaction. A million rows take seconds, not minutes.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { deriveKeys, loadMasterKey } from '../src/auth/keys.ts';
import { createSecretBox } from '../src/auth/secret-box.ts';
import { DEMO_CATALOG } from '../src/store/demo-catalog.ts';
import type { ServiceTable } from '../src/store/schema.ts';

/** Every column of ServiceTable; the compile-time check below fails if the table gains one. */
const COLUMNS = [
  'id',
  'reseller_id',
  'client_id',
  'product_id',
  'template_id',
  'domain_name',
  'username',
  'password_enc',
  'cpu',
  'ram',
  'hdd',
  'ip_count',
  'backup',
  'status',
  'resume_status',
  'suspend_reason',
  'projected_status',
  'projected_resume',
  'pending_jobs',
  'job_seq',
  'active_job_id',
  'host_id',
  'ips',
  'disk_revision',
  'created_at',
  'updated_at',
  'terminated_at',
  'password_applies',
  'error_code',
  'error_message',
  'ssh_keys',
  'rescue_since',
] as const satisfies readonly (keyof ServiceTable)[];
type Missing = Exclude<keyof ServiceTable, (typeof COLUMNS)[number]>;
const allColumns: [Missing] extends [never] ? true : Missing = true;
void allColumns;

const ROWS_PER_INSERT = 500;

/**
 * Inserts `n` running services and appends their ids, one a line, to `idsFile`; with
 * `intervals`, each also gets an open usage interval from `intervals.since` (what a create that
 * succeeded records), for the usage report. Returns how long it took (ms).
 */
export function seedServices(
  file: string,
  owner: SeedOwner,
  n: number,
  idsFile: string,
  intervals?: { readonly since: number },
): number {
  const t0 = performance.now();
  const db = new DatabaseSync(file);
  db.exec('pragma journal_mode = wal; pragma synchronous = off; pragma busy_timeout = 10000');
  db.exec('pragma cache_size = -200000');
  const product = DEMO_CATALOG.products[0]!;
  // Constant columns are literals; id, domain_name, created_at and updated_at are bound.
  const row = `(?, '${owner.resellerId}', '${owner.clientId}', '${product.id}', '${product.os_templates[0]}',
    ?, 'root', '${owner.passwordEnc}', 1, 1, 20, 1, 10, 'running', null, null,
    'running', null, 0, 1, null, 'sim-host-1', '["10.80.0.2"]', 1, ?, ?, null, null, null, null, '[]', null)`;
  const head = `insert into services (${COLUMNS.join(', ')}) values `;
  const full = db.prepare(head + Array.from({ length: ROWS_PER_INSERT }, () => row).join(','));
  const interval = `(?, ?, '${owner.resellerId}', '${product.id}', 1, 1, 20, 1, 10, 0, ${intervals?.since ?? 0}, null)`;
  const intervalHead =
    'insert into usage_intervals (id, service_id, reseller_id, product_id, cpu, ram, hdd, ip, backup, suspended, started_at, ended_at) values ';
  const fullIntervals = db.prepare(
    intervalHead + Array.from({ length: ROWS_PER_INSERT }, () => interval).join(','),
  );
  const now = Date.now();
  const ids: string[] = [];
  db.exec('begin');
  try {
    let done = 0;
    while (done < n) {
      const batch = Math.min(ROWS_PER_INSERT, n - done);
      const { params, intervalParams } = batchParams(batch, now - n + done, ids, done, owner);
      if (batch === ROWS_PER_INSERT) full.run(...params);
      else db.prepare(head + Array.from({ length: batch }, () => row).join(',')).run(...params);
      if (intervals) {
        if (batch === ROWS_PER_INSERT) fullIntervals.run(...intervalParams);
        else
          db.prepare(intervalHead + Array.from({ length: batch }, () => interval).join(',')).run(
            ...intervalParams,
          );
      }
      done += batch;
      if (ids.length >= 100_000) {
        appendFileSync(idsFile, `${ids.join('\n')}\n`);
        ids.length = 0;
      }
    }
    db.exec('commit');
  } catch (err) {
    db.exec('rollback');
    throw err;
  } finally {
    if (ids.length > 0) appendFileSync(idsFile, `${ids.join('\n')}\n`);
    db.close();
  }
  return performance.now() - t0;
}

/**
 * The same seeding on PostgreSQL (the `url` database, migrated), in multi-row INSERTs of
 * ROWS_PER_INSERT rows, committed every 50 statements. Returns how long it took (ms).
 */
export async function seedServicesPg(
  url: string,
  owner: SeedOwner,
  n: number,
  idsFile: string,
  intervals?: { readonly since: number },
): Promise<number> {
  const t0 = performance.now();
  const client = new pg.Client(url);
  await client.connect();
  const product = DEMO_CATALOG.products[0]!;
  const lit = (v: string) => `'${v.replaceAll("'", "''")}'`;
  const rowAt = (k: number) =>
    `($${k + 1}, ${lit(owner.resellerId)}, ${lit(owner.clientId)}, ${lit(product.id)}, ${lit(product.os_templates[0]!)},
    $${k + 2}, 'root', ${lit(owner.passwordEnc)}, 1, 1, 20, 1, 10, 'running', null, null,
    'running', null, 0, 1, null, 'sim-host-1', '["10.80.0.2"]', 1, $${k + 3}, $${k + 4}, null, null, null, null, '[]', null)`;
  const intervalAt = (k: number) =>
    `($${k + 1}, $${k + 2}, ${lit(owner.resellerId)}, ${lit(product.id)}, 1, 1, 20, 1, 10, 0, ${intervals?.since ?? 0}, null)`;
  const now = Date.now();
  const ids: string[] = [];
  try {
    await client.query('begin');
    let done = 0;
    let statements = 0;
    while (done < n) {
      const batch = Math.min(ROWS_PER_INSERT, n - done);
      const { params, intervalParams } = batchParams(batch, now - n + done, ids, done, owner);
      await client.query(
        `insert into services (${COLUMNS.join(', ')}) values ${Array.from({ length: batch }, (_, i) => rowAt(i * 4)).join(',')}`,
        params,
      );
      if (intervals)
        await client.query(
          `insert into usage_intervals (id, service_id, reseller_id, product_id, cpu, ram, hdd, ip, backup, suspended, started_at, ended_at) values ${Array.from({ length: batch }, (_, i) => intervalAt(i * 2)).join(',')}`,
          intervalParams,
        );
      done += batch;
      if (++statements % 50 === 0) {
        await client.query('commit');
        await client.query('begin');
      }
      if (ids.length >= 100_000) {
        appendFileSync(idsFile, `${ids.join('\n')}\n`);
        ids.length = 0;
      }
    }
    await client.query('commit');
    // Vacuumed as well as analyzed: left alone, autovacuum would take up the million new rows
    // (and merge the trigram index's pending entries) while the scenarios run, and measure
    // itself; a store that has been in use is in the state a vacuum leaves.
    await client.query(`vacuum (analyze) services${intervals ? ', usage_intervals' : ''}`);
  } finally {
    if (ids.length > 0) appendFileSync(idsFile, `${ids.join('\n')}\n`);
    await client.end();
  }
  return performance.now() - t0;
}

/**
 * The bound values of one batch of `batch` services: each service's id, domain name
 * (`node<n>.<label>.example.com`, n counting from `first` in this seeding) and times (from `t0`,
 * one ms apart), and each usage interval's id and service; the new ids are added to `ids`.
 */
function batchParams(batch: number, t0: number, ids: string[], first: number, owner: SeedOwner) {
  const params: (string | number)[] = [];
  const intervalParams: string[] = [];
  for (let i = 0; i < batch; i++) {
    const id = randomUUID();
    ids.push(id);
    params.push(id, `node${first + i}.${owner.domainLabel ?? 'bench'}.example.com`, t0 + i, t0 + i);
    intervalParams.push(randomUUID(), id);
  }
  return { params, intervalParams };
}

/** Whose services are seeded, and the password they all share, sealed with the store's key. */
export interface SeedOwner {
  readonly resellerId: string;
  readonly clientId: string;
  readonly passwordEnc: string;
  /** The second label of every seeded domain name (default `bench`): whose services a search finds. */
  readonly domainLabel?: string;
}

/**
 * The seeded services' password, sealed as the server seals passwords, with the key in
 * `dataDir` (made there if it is not yet, as the server would on its first start): details
 * open it on every request.
 */
export function sealedBenchPassword(dataDir: string): string {
  return createSecretBox(deriveKeys(loadMasterKey(undefined, dataDir)).passwordKey).seal('Bench-pass-word-1');
}

/** Empties `idsFile`. */
export function resetIds(idsFile: string): void {
  writeFileSync(idsFile, '');
}
