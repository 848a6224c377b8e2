import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { MIGRATIONS, SCHEMA_VERSION, STORE_FORMAT } from '../../src/store/postgres/postgres-schema.js';
import { RECORD_COLUMNS, recordColumns } from '../../src/store/record-columns.js';
import { liveWorkOfRecord } from '../../src/store/live-work.js';
import { timelineEntryOf } from '../../src/store/timeline.js';
import type { StoredRecord } from '../../src/store/store.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { propertyParameters } from '../support/property.js';

/** A field as records may hold it: a string (the usual), or any other JSON value a damaged or older record has. */
const field = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('2026-03-02T10:00:00.000Z', '2026-03-02T09:00:00.000Z', 'e1', 'nightly') },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(7, null, true, { at: 'x' }, ['a']) },
);
const maybe = (arbitrary: fc.Arbitrary<unknown>) => fc.option(arbitrary, { nil: undefined });
const state = fc.constantFrom('planned', 'eligible', 'claimed', 'running', 'succeeded', 'started', 'accepted');

/** An entity record (or a record of another kind) with each field present, absent or of an odd type. */
const record = fc
  .record({
    kind: fc.constantFrom('occurrence', 'run', 'attempt', 'definition'),
    terminal: fc.boolean(),
    state: fc.oneof(state, field),
    context: fc.record({ automationId: maybe(field), deadlineAt: maybe(field) }, { requiredKeys: [] }),
    fence: maybe(fc.record({ leaseExpiresAt: maybe(field), claimedBy: maybe(field) }, { requiredKeys: [] })),
    attributes: fc.record(
      {
        automationId: maybe(field),
        scheduledFor: maybe(field),
        notBefore: maybe(field),
        startedAt: maybe(field),
        automationRevision: maybe(fc.oneof(fc.integer({ min: 1, max: 99 }), field)),
        workerCorrelation: maybe(fc.record({ workerId: maybe(field) }, { requiredKeys: [] })),
      },
      { requiredKeys: [] },
    ),
  })
  .map(({ kind, terminal, state, context, fence, attributes }) => ({
    kind,
    terminal,
    data: {
      snapshot: { value: state, context: fence === undefined ? context : { ...context, fence } },
      attributes,
    },
  }));

describePostgres('PostgreSQL store: record columns (schema version 7)', (socketDir) => {
  let url: string;
  let client: pg.Client;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'record_columns');
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });
  afterAll(() => client.end());

  let schemas = 0;
  /** A store of schema version 6 holding `records`, as an engine before this version wrote them. */
  async function versionSix(records: Array<{ kind: string; terminal: boolean; data: unknown }>): Promise<string> {
    const schema = `six_${++schemas}`;
    await client.query(`CREATE SCHEMA ${schema}`);
    for (const migration of MIGRATIONS.filter((m) => m.version <= 6)) await client.query(migration.sql(schema));
    await client.query(`INSERT INTO ${schema}.store_schema (format, version) VALUES ($1, 6)`, [STORE_FORMAT]);
    for (const [i, r] of records.entries())
      await client.query(
        `INSERT INTO ${schema}.records (kind, id, version, terminal, data) VALUES ($1, $2, 1, $3, $4)`,
        [r.kind, `r${i}`, r.terminal, JSON.stringify(r.data)],
      );
    return schema;
  }

  test('migrating fills every column as the writer computes it, whatever type each field has', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 12 }), async (records) => {
        // One live occurrence per automation holds in any store this migrates: keep the first of each.
        const schema = await versionSix(records.map((r) => ({ ...r, data: liveOnce(r, records) })));
        const store = await PostgresStore.open(url, { schema });
        await store.close();
        const { rows } = await client.query<Record<string, string | null> & { id: string }>(
          `SELECT id, kind, version, terminal, data::text AS text, ${RECORD_COLUMNS.join(', ')} FROM ${schema}.records`,
        );
        for (const row of rows) {
          const stored: StoredRecord = {
            kind: row.kind!,
            id: row.id,
            version: 1,
            terminal: row.terminal as unknown as boolean,
            data: JSON.parse(row.text!),
          };
          expect(
            RECORD_COLUMNS.map((c) => row[c]),
            `${row.kind} ${row.text}`,
          ).toEqual(recordColumns(stored));
        }
        const version = await client.query(`SELECT version FROM ${schema}.store_schema`);
        expect(version.rows[0].version).toBe(SCHEMA_VERSION);
      }),
      propertyParameters('record columns after migration = the writer’s', 25),
    );
    // Each run opens stores on schemas of their own (migrations included): seconds on a loaded CI machine.
  }, 120_000);

  test('live work and timelines read from the columns say what the records say, written or migrated', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 12 }), async (records) => {
        const kept = records.map((r) => ({ ...r, data: liveOnce(r, records) }));
        const migrated = await PostgresStore.open(url, { schema: await versionSix(kept) });
        const written = await PostgresStore.open(url, { schema: `written_${++schemas}` });
        try {
          await written.transact(async (tx) => {
            for (const [i, r] of kept.entries())
              await tx.put(r.kind, `r${i}`, r.data, { expectedVersion: null, terminal: r.terminal });
          });
          for (const store of [migrated, written]) {
            const all = await store.read(async (r) => {
              const found: StoredRecord[] = [];
              for (const [i, k] of kept.entries()) found.push((await r.get(k.kind, `r${i}`))!);
              return found;
            });
            for (const kind of ['occurrence', 'attempt'] as const) {
              const expected = all
                .filter((x) => x.kind === kind)
                .flatMap((x) => liveWorkOfRecord(x) ?? [])
                .sort((a, b) => (a.id < b.id ? -1 : 1));
              expect(await store.read((r) => r.liveWork(kind))).toEqual(expected);
            }
            for (const kind of ['occurrence', 'run'] as const) {
              const expected = all
                .filter((x) => x.kind === kind)
                .map(timelineEntryOf)
                .filter((e) => e !== undefined)
                .sort((a, b) => (a!.at === b!.at ? (a!.id < b!.id ? 1 : -1) : a!.at < b!.at ? 1 : -1));
              expect(await store.read((r) => r.timeline(kind, { limit: 100 }))).toEqual(expected);
            }
          }
        } finally {
          await migrated.close();
          await written.close();
        }
      }),
      propertyParameters('live work and timelines from columns = from records', 15),
    );
    // Each run opens stores on schemas of their own (migrations included): seconds on a loaded CI machine.
  }, 120_000);
});

/**
 * The record's data, with its state made not live when an earlier occurrence of the same automation already is:
 * the store keeps one live occurrence per automation, so no store holds two.
 */
function liveOnce(
  r: { kind: string; terminal: boolean; data: { snapshot: { value: unknown; context: { automationId?: unknown } } } },
  all: Array<typeof r>,
) {
  const live = (x: typeof r) =>
    x.kind === 'occurrence' &&
    ['claimed', 'dispatching', 'running', 'recovering', 'recovery_required'].includes(x.data.snapshot.value as string);
  const automation = (x: typeof r) => JSON.stringify(x.data.snapshot.context.automationId);
  const first = all.find((x) => live(x) && automation(x) === automation(r));
  if (!live(r) || first === r || r.data.snapshot.context.automationId === undefined) return r.data;
  return { ...r.data, snapshot: { ...r.data.snapshot, value: 'succeeded' } };
}
