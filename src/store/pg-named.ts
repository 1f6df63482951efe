/**
 * PostgreSQL parses and plans every statement sent as plain text, each time. For a point read
 * or a one-row update that is most of the backend's work (bench/FINDINGS.md, "Named statements
 * on PostgreSQL"). A statement sent with a name is parsed once per connection, and planned on
 * each of its first five runs there; after that PostgreSQL keeps one generic plan for it unless
 * the plans made for the values each time came out cheaper (its `plan_cache_mode` of `auto`), and
 * a run only binds its values and executes. So a text's first runs on each connection cost more
 * than the rest, which is why the pool keeps idle connections for a minute (database.ts) and why
 * the number of texts matters (bench/FINDINGS.md, "A server's first services").
 *
 * The texts that get a name are the store's statements of fixed shape (prepared.ts, and the few
 * written as SQL once: `nameStatement`); every other statement goes as plain text, so the
 * connection keeps a bounded set. Kysely's pool is this wrapper around pg's: a client sends a
 * text that has a name with it, and anything else as it was given.
 *
 * A schema change made by another process (a newer version's migration, in a rolling upgrade)
 * can change what a named statement returns (`select *` of a table given a column): PostgreSQL
 * then refuses to run the connection's prepared copy ("cached plan must not change result type").
 * The text gets a new name, which each connection prepares afresh on its next run; a statement
 * outside a transaction is sent again at once, one inside fails as a conflict (errors.ts: 503,
 * a job's next attempt), since its transaction is already aborted.
 */
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { isCachedPlanChanged } from './errors.ts';

const names = new Map<string, string>();
let issued = 0;
const newName = () => `vrp_${++issued}`;

/** Gives `text` a statement name (once; later calls keep it). */
export function nameStatement(text: string): void {
  if (!names.has(text)) names.set(text, newName());
}

/**
 * Sends `text` with its name if it has one, else as plain text. A pool's query, or a client's
 * outside a transaction, whose prepared copy no longer fits is sent again under the text's new
 * name; inside a transaction the error is the caller's (its transaction is aborted).
 */
export async function sendNamed(
  via: Pick<pg.Pool, 'query'> | pg.PoolClient,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult> {
  const name = names.get(text);
  if (name === undefined) return via.query(text, values);
  const retry = !('getTransactionStatus' in via) || via.getTransactionStatus() === 'I';
  try {
    return await via.query({ name, text, values });
  } catch (err) {
    if (!isCachedPlanChanged(err)) throw err;
    if (names.get(text) === name) names.set(text, newName());
    if (!retry) throw err;
    return via.query({ name: names.get(text), text, values });
  }
}

type Command = PostgresQueryResult<unknown>['command'];
const COMMANDS: ReadonlySet<string> = new Set<Command>([
  'UPDATE',
  'DELETE',
  'INSERT',
  'SELECT',
  'MERGE',
  'COMMIT',
  'ROLLBACK',
]);
/**
 * Kysely reads a result's command only to tell writes (it counts their rows) and a transaction's
 * end from the rest; any other command (BEGIN, SAVEPOINT, ...) it treats as a read's.
 */
const isCommand = (command: string): command is Command => COMMANDS.has(command);

/** A pooled client that sends the named texts with their names. */
class NamedStatementsClient implements PostgresPoolClient {
  readonly #client: pg.PoolClient;
  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sql: string | PostgresCursor<R>,
    parameters: ReadonlyArray<unknown> = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Kysely streams through a cursor only when its dialect is given a cursor class; the store's is not.
    if (typeof sql !== 'string') throw new Error('the store does not stream results');
    return this.#send(sql, [...parameters]);
  }

  async #send<R>(text: string, values: unknown[]): Promise<PostgresQueryResult<R>> {
    const r = await sendNamed(this.#client, text, values);
    return { command: isCommand(r.command) ? r.command : 'SELECT', rowCount: r.rowCount ?? 0, rows: r.rows };
  }

  release(destroy?: boolean): void {
    this.#client.release(destroy);
  }
}

/** pg's pool, seen by Kysely through clients that send the named texts with their names. */
export function namedStatementsPool(pool: pg.Pool): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, NamedStatementsClient>();
  return {
    options: pool.options,
    async connect() {
      const client = await pool.connect();
      let w = wrapped.get(client);
      if (!w) {
        w = new NamedStatementsClient(client);
        wrapped.set(client, w);
      }
      return w;
    },
    end: () => pool.end(),
  };
}
