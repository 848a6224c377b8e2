import { afterEach, expect, test, vi } from 'vitest';
import { SimulatedClock } from '../../src/clock/clock.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { advanceAll } from '../../src/scheduler/pass.js';
import { Connection } from '../../src/store/postgres/connection.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { PostgresTransaction } from '../../src/store/postgres/postgres-transaction.js';
import { definition } from '../../bench/fixtures.js';
import { command } from '../support/commands.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** An engine on a PostgreSQL store at `url`, its clock at 08:00 on 2026-03-02, sessions lasting a minute. */
async function engineAt8(url: string, schema: string) {
  const store = await PostgresStore.open(url, { schema });
  const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
  const runtime = new SimulatedRuntime({ runtimeId: 'coven-code', durationMs: 60_000 });
  const engine = createEngine({ store, clock, runtimes: [runtime], instanceId: 'engine-0', retention: false });
  return { store, clock, engine };
}

/** An active definition due daily at `hour` (UTC). */
async function define(engine: Engine, id: string, hour: number): Promise<void> {
  const rule = `FREQ=DAILY;BYHOUR=${hour}`;
  for (const [name, payload, revision] of [
    ['definition.create.v1', { definition: definition(id, 1, 'draft', rule) }, undefined],
    ['definition.revise.v1', { definition: definition(id, 2, 'paused', rule) }, 1],
    ['definition.activate.v1', { automationId: id }, 2],
  ] as const) {
    const response = await engine.commands.handle(command(name, payload, { expectedRevision: revision }));
    expect(response.outcome, JSON.stringify(response.error)).not.toBe('rejected');
  }
}

// The set-based claim is a write transaction, queued behind every other commit: a pass opens it only when the read
// at its start found something due, or when it planned something it did not claim in the planning commit. Without a
// claim the work would still be taken one occurrence at a time, so only the count of claims shows the gate.
describePostgres('a pass on a shared store claims in batches only when something is due', (socketDir) => {
  test('nothing due or planned and claimed by the pass: no batch; due at the pass’s start: claimed in a batch', async () => {
    const { store, clock, engine } = await engineAt8(await freshDatabase(socketDir, 'claim_gate'), 'gate');
    const claims = vi.spyOn(PostgresTransaction.prototype, 'lockDueOccurrences');
    try {
      await define(engine, 'gate-a', 9);
      await define(engine, 'gate-b', 10);
      await engine.tick();
      expect(claims).not.toHaveBeenCalled();

      // Planned by this pass: claimed in its planning commit, so no batch is needed for it.
      clock.set('2026-03-02T09:00:01.000Z');
      expect((await engine.tick()).launched).toBe(1);
      expect(claims).not.toHaveBeenCalled();
      await engine.tick();
      expect(claims).not.toHaveBeenCalled();

      // Planned before the pass (here without one, as another engine's pass would): due when the pass begins.
      clock.set('2026-03-02T10:00:01.000Z');
      expect((await planDueSlots(engine.services)).planned).toHaveLength(1);
      const report = await engine.tick();
      expect(report.planned).toBe(0);
      expect(report.launched).toBe(1);
      expect(claims).toHaveBeenCalled();
    } finally {
      await engine.stop();
      await store.close();
    }
  });

  test('a due slot is planned, claimed and its launch queued in one transaction of three statements', async () => {
    const { store, clock, engine } = await engineAt8(await freshDatabase(socketDir, 'plan_carry'), 'carry');
    try {
      for (let i = 0; i < 4; i++) await define(engine, `carry-${i}`, 9);
      await engine.tick();
      clock.set('2026-03-02T09:00:01.000Z');
      const statements = vi.spyOn(Connection.prototype, 'run');
      const opening = vi.spyOn(Connection.prototype, 'rowsOpening');
      expect((await engine.tick()).launched).toBe(4);
      const shape = (sql: string) =>
        sql.includes('FOR UPDATE SKIP LOCKED')
          ? 'lock'
          : sql.startsWith('WITH inserted')
            ? 'write'
            : sql.trimStart().startsWith('SELECT r.kind')
              ? 'prefetch'
              : sql;
      for (let i = 0; i < 4; i++) {
        // The automation, its revision (`@`) and its occurrence's records (`-`), wherever a statement names them.
        const names = (value: unknown): boolean =>
          Array.isArray(value)
            ? value.some(names)
            : typeof value === 'string' &&
              [`carry-${i}`, `carry-${i}@`, `carry-${i}-`].some((p) => value.startsWith(p));
        const about = (calls: Array<[string, unknown[]?]>) => calls.filter(([, values]) => (values ?? []).some(names));
        // The planning transaction: its prefetch (definition, cursor, slot, revision and live occurrences) with
        // BEGIN, the plan cursor's lock, its writes with COMMIT. Then the launch's answer: its prefetch and writes.
        const shapes = (calls: unknown[][]) => about(calls as Array<[string, unknown[]?]>).map(([sql]) => shape(sql));
        expect(shapes(opening.mock.calls)).toEqual(['prefetch', 'lock', 'prefetch']);
        expect(shapes(statements.mock.calls)).toEqual(['lock', 'write', 'write']);
      }
    } finally {
      await engine.stop();
      await store.close();
    }
  });

  test('planning and a claim batch read what they need a few statements at a time, not a round trip per record', async () => {
    const { store, clock, engine } = await engineAt8(await freshDatabase(socketDir, 'claim_reads'), 'reads');
    try {
      for (let i = 0; i < 6; i++) await define(engine, `batch-${i}`, 9);
      clock.set('2026-03-02T09:00:01.000Z');
      const statements = vi.spyOn(Connection.prototype, 'run');
      /** Reads of one record (or its version) of these kinds since the last call. */
      const singleReads = (kinds: string[]) =>
        statements.mock.calls
          .splice(0)
          .filter(([sql, values]) => sql.endsWith('WHERE kind = $1 AND id = $2') && kinds.includes(values[0] as string))
          .map(([, values]) => values.slice(0, 2).join(' '));
      singleReads([]);
      expect((await planDueSlots(engine.services)).planned).toHaveLength(6);
      expect(singleReads(['definition', 'quarantine', 'plan-cursor', 'occurrence', 'occurrence-key'])).toEqual([]);
      await advanceAll(engine.services);
      expect(singleReads(['occurrence', 'definition', 'quarantine'])).toEqual([]);
      const live = await store.read((r) => r.liveWork('occurrence'));
      expect(live.map((w) => w.state)).toEqual(Array(6).fill('claimed'));
    } finally {
      await engine.stop();
      await store.close();
    }
  });
});
