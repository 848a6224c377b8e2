import type pg from 'pg';
import { PostgresSchemaError } from './postgres-errors.js';
import { LIVE_WORK_MIGRATION } from './live-work-index.js';
import { FEED_HORIZON_MIGRATION } from './feed-clock.js';
import { LIVE_WORK_QUERY_MIGRATION } from './live-work-queries.js';
import { TIMELINE_MIGRATION } from './timeline-queries.js';
import { RECORD_COLUMNS_MIGRATION } from './record-columns-migration.js';
import { LIVE_TURNS_MIGRATION } from './live-turns.js';
import { OVERLAP_ALLOW_MIGRATION } from './overlap-allow-migration.js';

/** What the `store_schema` row names as its format: a table of that name in any other shape is foreign. */
export const STORE_FORMAT = 'coven-automata';

/**
 * Each step brings a schema from the version before it to its own. A new store runs them all; an older
 * store runs those past its version, inside one transaction, so it is migrated whole or not at all.
 */
interface Migration {
  readonly version: number;
  readonly sql: (s: string) => string;
  /** Why this store cannot be migrated to this version (refused untouched), or undefined. */
  readonly refusal?: (client: pg.ClientBase, s: string) => Promise<string | undefined>;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    // Ids and streams compare byte-wise (COLLATE "C"), as the other stores' string order does, whatever the
    // database's locale. `data` is json, not jsonb: stored as given, so key order survives a round trip.
    version: 1,
    sql: (s) => `
      CREATE TABLE ${s}.store_schema (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        format text NOT NULL, version integer NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE ${s}.records (
        kind text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, version integer NOT NULL,
        terminal boolean NOT NULL, data json NOT NULL, PRIMARY KEY (kind, id));
      CREATE TABLE ${s}.log (
        position bigint PRIMARY KEY, stream text COLLATE "C" NOT NULL, sequence bigint NOT NULL,
        data json NOT NULL, UNIQUE (stream, sequence));
      CREATE SEQUENCE ${s}.log_position MINVALUE 0 START 0;`,
  },
  {
    // Defence in depth under the machines, as on SQLite: the database itself refuses a second run for one
    // occurrence fence and a session bound to two attempts, even if engine logic were wrong.
    version: 2,
    sql: (s) => `
      CREATE UNIQUE INDEX one_run_per_fence ON ${s}.records (
        (data->'snapshot'->'context'->>'occurrenceId'), (data->'snapshot'->'context'->>'fenceGeneration'))
        WHERE kind = 'run';
      CREATE UNIQUE INDEX one_session_per_attempt ON ${s}.records ((data->'snapshot'->'context'->>'sessionId'))
        WHERE kind = 'attempt' AND (data->'snapshot'->'context'->>'sessionId') IS NOT NULL;`,
  },
  LIVE_WORK_MIGRATION,
  FEED_HORIZON_MIGRATION,
  LIVE_WORK_QUERY_MIGRATION,
  TIMELINE_MIGRATION,
  RECORD_COLUMNS_MIGRATION,
  LIVE_TURNS_MIGRATION,
  OVERLAP_ALLOW_MIGRATION,
];

export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;
/** The relations a store of the current version has; one missing means the schema was damaged. */
const REQUIRED = ['store_schema', 'records', 'log'];
/** First key of the store's advisory locks (the second is the schema's hash): "cova". */
export const ADVISORY_CLASS = 0x636f7661;
/** Second-key salt of the lock that opening (create or migrate) takes. */
export const SCHEMA_LOCK = 1;

/** Schema names the store accepts: a plain lower-case identifier, so quoting is never in doubt. */
export function quoteSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    throw new PostgresSchemaError('(not opened)', schema, 'a schema name is lower-case letters, digits and _');
  return `"${schema}"`;
}

/** What a schema holds now: no relations at all (a new store), or its relations and its version row. */
async function inspect(client: pg.ClientBase, schema: string) {
  const relations = (
    await client.query<{ relname: string }>(
      'SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace ' +
        "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f')",
      [schema],
    )
  ).rows.map((r) => r.relname);
  if (!relations.includes('store_schema')) return { relations, row: undefined };
  const columns = (
    await client.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'store_schema'",
      [schema],
    )
  ).rows.map((r) => r.column_name);
  if (!columns.includes('format') || !columns.includes('version')) return { relations, row: null };
  const row = (
    await client.query<{ format: string; version: number }>(
      `SELECT format, version FROM ${quoteSchema(schema)}.store_schema`,
    )
  ).rows;
  return { relations, row: row.length === 1 ? row[0]! : null };
}

/**
 * Creates the store's schema, or migrates an older one, or checks a current one; refuses a foreign or newer
 * schema with {@link PostgresSchemaError} before anything is written. Runs in one transaction under an
 * advisory lock, so engines opening the same store at once create or migrate it once. Returns the version found
 * (0 for a new store).
 */
export async function prepareSchema(client: pg.ClientBase, location: string, schema: string): Promise<number> {
  const s = quoteSchema(schema);
  const refuse = (reason: string) => new PostgresSchemaError(location, schema, reason);
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2) # $3)', [ADVISORY_CLASS, schema, SCHEMA_LOCK]);
    const { relations, row } = await inspect(client, schema);
    let found = 0;
    if (row === undefined && relations.length > 0)
      throw refuse(`it holds ${relations.sort().join(', ')} but no store_schema table: not a coven-automata store`);
    if (row === null) throw refuse('its store_schema table is not the one this store writes');
    if (row !== undefined) {
      if (row.format !== STORE_FORMAT) throw refuse(`its store_schema names the format ${JSON.stringify(row.format)}`);
      if (row.version > SCHEMA_VERSION || !MIGRATIONS.some((m) => m.version === row.version))
        throw refuse(`schema version ${row.version} is not supported (this build reads 1 to ${SCHEMA_VERSION})`);
      found = row.version;
      const missing = REQUIRED.filter((name) => !relations.includes(name));
      if (missing.length > 0) throw refuse(`it lacks ${missing.join(', ')}`);
    }
    if (found < SCHEMA_VERSION) {
      if (found === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      for (const migration of MIGRATIONS) {
        if (migration.version <= found) continue;
        const refusal = found === 0 ? undefined : await migration.refusal?.(client, s);
        if (refusal !== undefined) throw refuse(refusal);
        await client.query(migration.sql(s));
      }
      await client.query(
        `INSERT INTO ${s}.store_schema (format, version) VALUES ($1, $2) ` +
          'ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()',
        [STORE_FORMAT, SCHEMA_VERSION],
      );
    }
    await client.query('COMMIT');
    return found;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
