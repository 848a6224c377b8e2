import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { MIGRATIONS, SCHEMA_VERSION, STORE_FORMAT } from '../../src/store/postgres/postgres-schema.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { SCHEMA_VERSION as SQLITE_VERSION } from '../../src/store/sqlite/sqlite-open.js';
import { RETIRED_INDEX_KINDS } from '../../src/store/live-work.js';
import type { Store } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-live-work-migration-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const occurrence = (automationId: string, state: string) => ({
  snapshot: { value: state, context: { automationId, fence: { generation: 1, leaseExpiresAt: null } } },
  attributes: { scheduledFor: '2026-01-01T09:00:00.000Z', automationRevision: 1 },
});

/** What an engine before this version wrote: two occurrences and the index records it kept for them. */
async function writeLegacy(store: Store): Promise<void> {
  await store.transact(async (tx) => {
    await tx.put('occurrence', 'o1', occurrence('nightly', 'planned'), { expectedVersion: null });
    await tx.put('occurrence', 'o2', occurrence('nightly', 'succeeded'), { expectedVersion: null, terminal: true });
    await tx.put('live-occurrence', 'o1', { automationId: 'nightly' }, { expectedVersion: null });
    await tx.put('live-occurrence-by-automation', 'nightly', { occurrenceIds: ['o1'] }, { expectedVersion: null });
  });
}

/** After migration: the retired index records are gone and the store's own index answers. */
async function expectMigrated(store: Store): Promise<void> {
  await store.read(async (r) => {
    for (const kind of RETIRED_INDEX_KINDS) expect(await r.list(kind)).toEqual([]);
    expect((await r.liveWork('occurrence', { automationId: 'nightly' })).map((w) => [w.id, w.state])).toEqual([
      ['o1', 'planned'],
    ]);
  });
}

test('an SQLite store of schema version 2 is migrated on open: its live work indexed, its index records removed', async () => {
  const file = join(dir, 'v2.sqlite');
  const store = await SqliteStore.open(file);
  await writeLegacy(store);
  await store.close();
  // As version 2 left it: without the live-work indexes.
  const db = new Database(file);
  db.exec(
    "DROP INDEX live_work; DROP INDEX live_work_by_automation; UPDATE meta SET value = '2' WHERE key = 'schemaVersion';",
  );
  db.close();
  const migrated = await SqliteStore.open(file);
  try {
    await expectMigrated(migrated);
  } finally {
    await migrated.close();
  }
  const check = new Database(file, { readonly: true });
  expect(check.prepare("SELECT value FROM meta WHERE key = 'schemaVersion'").pluck().get()).toBe(
    String(SQLITE_VERSION),
  );
  expect(
    check.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'live_work%' ORDER BY name").pluck().all(),
  ).toEqual(['live_work', 'live_work_by_automation']);
  check.close();
  // Opened again, the migrated store's schema checksum holds.
  await (await SqliteStore.open(file)).close();
});

describePostgres('PostgreSQL store: schema version 5 indexes live work', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'live_work_migration');
  });

  test('a store of schema version 3 is migrated on open: its live work indexed, its index records removed', async () => {
    const schema = 'version_three';
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
      for (const migration of MIGRATIONS.filter((m) => m.version <= 3)) await client.query(migration.sql(schema));
      await client.query(`INSERT INTO ${schema}.store_schema (format, version) VALUES ($1, 3)`, [STORE_FORMAT]);
      const insert = (kind: string, id: string, terminal: boolean, data: unknown) =>
        client.query(`INSERT INTO ${schema}.records VALUES ($1, $2, 1, $3, $4)`, [
          kind,
          id,
          terminal,
          JSON.stringify(data),
        ]);
      await insert('occurrence', 'o1', false, occurrence('nightly', 'planned'));
      await insert('occurrence', 'o2', true, occurrence('nightly', 'succeeded'));
      await insert('live-occurrence', 'o1', false, { automationId: 'nightly' });
      await insert('live-occurrence-by-automation', 'nightly', false, { occurrenceIds: ['o1'] });
      const store = await PostgresStore.open(url, { schema });
      try {
        await expectMigrated(store);
      } finally {
        await store.close();
      }
      const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${schema}.store_schema`);
      expect(rows[0]!.version).toBe(SCHEMA_VERSION);
      const indexes = await client.query<{ indexname: string }>(
        "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname IN ('live_work', 'live_work_by_automation', 'claimable_occurrences') ORDER BY 1",
        [schema],
      );
      expect(indexes.rows.map((r) => r.indexname)).toEqual([
        'claimable_occurrences',
        'live_work',
        'live_work_by_automation',
      ]);
    } finally {
      await client.end();
    }
  });
});
