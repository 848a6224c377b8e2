import { randomBytes } from 'node:crypto';
import { PostgresStore } from '../../store/postgres/index.js';

/**
 * A schema of its own in a PostgreSQL database for one engine world: each engine opens its own store on it
 * (its own pool, commit queue and notifications), as engine processes sharing a database do. Dropped with
 * everything in it when the world is disposed.
 */
export class ScratchPostgres {
  private readonly stores: PostgresStore[] = [];

  private constructor(
    private readonly url: string,
    readonly schema: string,
  ) {}

  static create(url: string | undefined): ScratchPostgres {
    if (url === undefined)
      throw new Error('the postgres store kind needs a database: give postgresUrl (CLI: --postgres-url URL)');
    return new ScratchPostgres(url, `inv_${randomBytes(6).toString('hex')}`);
  }

  /** Another store on the world's schema (the first open creates the schema). */
  async open(): Promise<PostgresStore> {
    const store = await PostgresStore.open(this.url, { schema: this.schema, poolSize: 3 });
    this.stores.push(store);
    return store;
  }

  /** Closes every store opened on the schema and drops it. */
  async drop(): Promise<void> {
    for (const store of this.stores.splice(0)) await store.close();
    await PostgresStore.dropSchema(this.url, this.schema);
  }
}
