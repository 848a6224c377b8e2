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

  async rows<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.run<R>(text, values)).rows;
  }
  async run<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const sql = text.replaceAll('{s}', this.schema);
    return this.client.query<R>({ name: named(sql), text: sql, values });
  }
}
