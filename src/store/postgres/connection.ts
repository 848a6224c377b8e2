import type pg from 'pg';
import type { FeedClock } from './feed-clock.js';

const statementNames = new Map<string, string>();
/** Named statements: node-postgres prepares each once per connection and then only binds and executes it. */
function named(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) statementNames.set(text, (name = `coven_${statementNames.size}`));
  return name;
}

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

  /** The statement that begins this connection's transaction, while it waits to travel with the first statement. */
  private opening: string | undefined;

  /**
   * Begins a transaction lazily: `begin` goes with the first statement that needs the database, in one message
   * where that statement can be sent as a simple query (see {@link rowsOpening}), else just ahead of it. Under
   * REPEATABLE READ the snapshot is the first statement's either way.
   */
  openLazily(begin: string): void {
    this.opening = begin;
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
   * Like {@link rows}; when the transaction has not begun yet, sends its `BEGIN` and `inline` (the same statement
   * with its values written in as literals, by `literal`, and the quoted schema where `text` has `{s}`) as one
   * simple query: one round trip instead of two.
   */
  async rowsOpening<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[],
    inline: (literal: (value: string) => string, schema: string) => string,
  ): Promise<R[]> {
    const opening = this.takeOpening();
    if (opening === undefined) return this.rows<R>(text, values);
    // No substitution after the values are in: a literal may hold any text, `{s}` too.
    const sql = inline((value) => this.client.escapeLiteral(value), this.schema);
    const results = (await this.client.query(`${opening}; ${sql}`)) as unknown as Array<pg.QueryResult<R>>;
    return results[results.length - 1]!.rows;
  }

  /**
   * A transaction-control statement (savepoint, release, commit, rollback): before the transaction's first
   * statement there is nothing for it to act on, so nothing is sent, not even the transaction's `BEGIN`.
   */
  async control(sql: string): Promise<void> {
    if (this.opening === undefined) await this.client.query(sql);
  }

  /** Ends the transaction with `sql` (COMMIT, ROLLBACK); one that never began ends without a round trip. */
  async end(sql: string): Promise<void> {
    if (this.takeOpening() === undefined) await this.client.query(sql);
  }

  private takeOpening(): string | undefined {
    const opening = this.opening;
    this.opening = undefined;
    return opening;
  }
}
