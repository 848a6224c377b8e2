import type pg from 'pg';
import type { FeedClock } from './feed-clock.js';

const statementNames = new Map<string, string>();
/** Named statements: node-postgres prepares each once per connection and then only binds and executes it. */
function named(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) statementNames.set(text, (name = `coven_${statementNames.size}`));
  return name;
}

/** The statements prepared with SQL's `PREPARE` on each connection (they live as long as its session). */
const preparedByClient = new WeakMap<pg.ClientBase, Set<string>>();

/** One connection's statements against one store schema. */
export class Connection {
  constructor(
    readonly client: pg.ClientBase,
    /** The quoted schema name. */
    readonly schema: string,
    /** Where the store's feed positions start. */
    readonly feed: FeedClock,
    /** How messages name the store (its connection string without the password). */
    readonly location: string,
  ) {}

  /**
   * What waits to travel with the next statement: the transaction's BEGIN before its first statement, or a
   * savepoint's renewal between a group's jobs (see {@link deferControl}).
   */
  private opening: string | undefined;
  /** The transaction's BEGIN was sent: ending it takes a statement. */
  private begun = false;
  /** The transaction already ended, by a statement that carried its COMMIT or by the ROLLBACK after one failed. */
  private ended = false;

  /**
   * Begins a transaction lazily: `begin` goes with the first statement that needs the database, in one message
   * where that statement can be sent as a simple query (see {@link rowsOpening}), else just ahead of it. Under
   * REPEATABLE READ the snapshot is the first statement's either way.
   */
  openLazily(begin: string): void {
    this.opening = begin;
    this.begun = false;
    this.ended = false;
  }

  /** Whether the transaction's BEGIN still waits for its first statement: nothing was sent in it yet. */
  get unbegun(): boolean {
    return this.opening !== undefined && !this.begun;
  }

  async rows<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.run<R>(text, values)).rows;
  }
  async run<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const opening = this.takeOpening();
    if (opening !== undefined) await this.client.query(opening);
    const sql = text.replaceAll('{s}', this.schema);
    return this.client.query<R>({ name: named(sql), text: sql, values });
  }

  /**
   * Like {@link rows}; when the transaction has not begun yet, sends its `BEGIN` and an `EXECUTE` of the statement
   * (prepared once per connection with SQL's `PREPARE`, so the server plans it once as it does a named statement)
   * as one simple query: one round trip instead of two. The values (text arrays, texts, booleans and nulls) are
   * written in as literals by the driver's own escaping.
   */
  async rowsOpening<R extends pg.QueryResultRow>(
    text: string,
    values: ReadonlyArray<string[] | string | boolean | null>,
  ): Promise<R[]> {
    const opening = this.takeOpening();
    if (opening === undefined) return this.rows<R>(text, [...values]);
    const name = await this.preparedForExecute(text.replaceAll('{s}', this.schema));
    const literals = values.map((value) =>
      value === null || typeof value === 'boolean'
        ? String(value)
        : typeof value === 'string'
          ? quoteLiteral(value)
          : `ARRAY[${value.map(quoteLiteral).join(', ')}]::text[]`,
    );
    const results = (await this.client.query(
      `${opening}; EXECUTE ${name}(${literals.join(', ')})`,
    )) as unknown as Array<pg.QueryResult<R>>;
    return results[results.length - 1]!.rows;
  }

  /**
   * Executes `text` and commits in one simple-query message (with the transaction's BEGIN when it has not been
   * sent): one round trip where a statement and then COMMIT cost two. The statement must raise when what it did may
   * not be committed, since COMMIT follows it unconditionally; after such an error the transaction is rolled back
   * and the error thrown. The values travel as literals of their SQL types ({@link literalOf}). Answers the
   * statement's rows.
   */
  async executeThenCommit(text: string, values: ReadonlyArray<TypedValue>): Promise<Array<Record<string, unknown>>> {
    const opening = this.takeOpening();
    const name = await this.preparedForExecute(text.replaceAll('{s}', this.schema));
    const literals = values.map(([value, type]) => literalOf(value, type)).join(', ');
    const execute = `EXECUTE ${name}(${literals}); COMMIT`;
    try {
      const results = (await this.client.query(
        opening === undefined ? execute : `${opening}; ${execute}`,
      )) as unknown as pg.QueryResult[];
      // The statement's rows: the result before COMMIT's.
      return results[results.length - 2]!.rows as Array<Record<string, unknown>>;
    } catch (error) {
      // The server skipped the COMMIT after the failed statement: the transaction is open and aborted.
      await this.client.query('ROLLBACK');
      throw error;
    } finally {
      this.ended = true;
    }
  }

  /** The name `sql` is prepared under on this connection, preparing it first (outside any transaction) if new. */
  private async preparedForExecute(sql: string): Promise<string> {
    const name = `${named(sql)}_x`;
    let prepared = preparedByClient.get(this.client);
    if (prepared === undefined) preparedByClient.set(this.client, (prepared = new Set()));
    if (!prepared.has(name)) {
      await this.client.query(`PREPARE ${name} AS ${sql}`);
      prepared.add(name);
    }
    return name;
  }

  /**
   * A transaction-control statement (savepoint, release, commit, rollback): before the transaction's first
   * statement there is nothing for it to act on, so nothing is sent, not even the transaction's `BEGIN`.
   */
  async control(sql: string): Promise<void> {
    // Something waiting to travel means nothing was sent since the savepoint it renews (or the BEGIN it follows).
    if (this.opening === undefined && !this.ended) await this.client.query(sql);
  }

  /**
   * A control statement that renews the savepoint between jobs (`RELEASE job; SAVEPOINT job`), sent with the next
   * job's first statement instead of on its own: a round trip saved per job. Nothing to renew while what is
   * waiting already sets the savepoint (the BEGIN's, or a renewal the last job never needed), and COMMIT or
   * ROLLBACK with it still waiting drops it, as ending the transaction would release it anyway.
   */
  deferControl(sql: string): void {
    if (this.opening === undefined && this.begun && !this.ended) this.opening = sql;
  }

  /**
   * Ends the transaction with `sql` (COMMIT, ROLLBACK); one that never began, or that a statement already ended
   * ({@link executeThenCommit}), ends without a round trip.
   */
  async end(sql: string): Promise<void> {
    this.opening = undefined;
    if (this.begun && !this.ended) await this.client.query(sql);
    this.ended = true;
  }

  private takeOpening(): string | undefined {
    const opening = this.opening;
    this.opening = undefined;
    if (opening !== undefined) this.begun = true;
    return opening;
  }
}

/** A value and the SQL type it has in a statement (`text[]`, `int`, `json[]`…). */
export type TypedValue = readonly [value: unknown, type: string];

/**
 * `value` written as a literal of `type` for a simple query: strings quoted ({@link quoteLiteral}), arrays element
 * by element (`ARRAY[…]::type`), NULL for null. Only values the store itself sends go through here: strings,
 * finite numbers, booleans and arrays of them.
 */
function literalOf(value: unknown, type: string): string {
  if (Array.isArray(value)) {
    const element = type.slice(0, -2);
    return `ARRAY[${value.map((v) => literalOf(v, element)).join(', ')}]::${type}`;
  }
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string') return quoteLiteral(value);
  throw new TypeError(`no SQL literal for a ${typeof value}`);
}

/**
 * `text` as a string literal, exactly as the driver's `escapeLiteral` writes it (quotes doubled; with a backslash,
 * backslashes doubled in an E'' literal), by two native replaces: the driver's character loop costs a job's
 * kilobytes of JSON a noticeable share of a write.
 */
function quoteLiteral(text: string): string {
  const quoted = `'${text.replaceAll("'", "''")}'`;
  return text.includes('\\') ? ` E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}
