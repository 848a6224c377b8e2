import { expect, test } from 'vitest';
import { advanceAll } from '../../src/scheduler/pass.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import type { StoreReader, StoreTransaction } from '../../src/store/store.js';
import { command, definitionBody } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';
import { watched } from '../support/watched-reader.js';

/** Records every definition record a transaction reads in full (get), as `kind id`. */
/** Definition reads, in transactions and outside them (a pass reads what moved once, before its claims). */
function countDefinitionGets(h: Harness): string[] {
  const gets: string[] = [];
  const watch = (method: string, kind: unknown, id: unknown) =>
    method === 'get' && kind === 'definition' && gets.push(`${String(kind)} ${String(id)}`);
  const transact = h.store.transact.bind(h.store);
  h.store.transact = <R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> =>
    transact((tx) => body(watched(tx, watch)));
  const read = h.store.read.bind(h.store);
  h.store.read = <R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> =>
    read((reader) => body(watched(reader, watch)));
  return gets;
}

test('a claim checks the definition as its own transaction holds it: paused or revised after planning, the occurrence is disposed of', async () => {
  // The pass that planned the slot remembered the definition active at revision 3; both changes come after.
  const paused = await harness({ start: '2026-03-02T09:00:00.000Z' });
  expect((await planDueSlots(paused.engine.services)).planned).toHaveLength(1);
  await paused.ok(command('definition.pause.v1', { automationId: 'daily' }, { expectedRevision: 3 }));
  expect(await advanceAll(paused.engine.services)).toEqual([]);
  expect(await paused.read.occurrences()).toMatchObject([
    { state: 'skipped', stateReason: 'definition paused', misfireDisposition: 'skipped_paused' },
  ]);

  const revised = await harness({ start: '2026-03-02T09:00:00.000Z' });
  expect((await planDueSlots(revised.engine.services)).planned).toHaveLength(1);
  await revised.ok(
    command(
      'definition.revise.v1',
      { definition: definitionBody('daily', { revision: 4, lifecycleState: 'active', rrule: 'FREQ=DAILY;BYHOUR=9' }) },
      { expectedRevision: 3 },
    ),
  );
  await advanceAll(revised.engine.services);
  expect(await revised.read.occurrences()).toMatchObject([
    { state: 'superseded', stateReason: 'superseded by revision 4' },
  ]);
});

test('only a claim needs the definition, and it reads the record only when its version moved', async () => {
  const h = await harness({ start: '2026-03-02T09:00:00.000Z' });
  await planDueSlots(h.engine.services);
  const gets = countDefinitionGets(h);

  await advanceAll(h.engine.services);
  expect(await h.read.occurrences()).toMatchObject([{ state: 'claimed' }]);
  expect(gets).toEqual([]);

  // Claimed, then running: advancing either reads no definition at all.
  await advanceAll(h.engine.services);
  await h.engine.tick();
  expect(await h.read.occurrences()).toMatchObject([{ state: 'running' }]);
  gets.length = 0;
  await advanceAll(h.engine.services);
  expect(gets).toEqual([]);

  // A second automation's slot, its definition revised since the directory read it: read once, in the claim.
  h.clock.advance({ hours: 1 });
  const other = (revision: number, lifecycleState: 'draft' | 'paused') => ({
    definition: definitionBody('other', { revision, lifecycleState, rrule: 'FREQ=DAILY;BYHOUR=10' }),
  });
  await h.ok(command('definition.create.v1', other(1, 'draft')));
  await h.ok(command('definition.revise.v1', other(2, 'paused'), { expectedRevision: 1 }));
  await h.ok(command('definition.activate.v1', { automationId: 'other' }, { expectedRevision: 2 }));
  expect((await planDueSlots(h.engine.services)).planned).toHaveLength(1);
  const record = (await h.store.read((r) => r.get<Record<string, unknown>>('definition', 'other')))!;
  await h.store.transact((tx) =>
    tx.put('definition', 'other', { ...record.data }, { expectedVersion: record.version }),
  );
  gets.length = 0;
  await advanceAll(h.engine.services);
  expect(gets).toEqual(['definition other']);
  expect((await h.read.occurrences()).find((o) => o.automationId === 'other')).toMatchObject({ state: 'claimed' });
});
