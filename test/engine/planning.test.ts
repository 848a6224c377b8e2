import { expect, test } from 'vitest';
import { DefinitionDirectory } from '../../src/domain/definition-directory.js';
import { planDueSlots } from '../../src/scheduler/planning.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { StoreReader, StoreTransaction } from '../../src/store/store.js';
import { command, definitionBody } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';
import { watched } from '../support/watched-reader.js';

/** Before the pass's first transaction, pauses the definition behind the pass's back (another engine, say). */
function pauseBeforeFirstTransaction(h: Awaited<ReturnType<typeof harness>>): void {
  const transact = h.store.transact.bind(h.store);
  let sneaked = false;
  h.store.transact = async <R>(body: (tx: StoreTransaction) => Promise<R> | R): Promise<R> => {
    if (!sneaked) {
      sneaked = true;
      await transact(async (tx) => {
        const current = (await tx.get<{ snapshot: { value: string } }>('definition', 'daily'))!;
        await tx.put(
          'definition',
          'daily',
          { ...current.data, snapshot: { ...current.data.snapshot, value: 'paused' } },
          { expectedVersion: current.version },
        );
      });
    }
    return transact(body);
  };
}

test('planning uses the definition the pass read only while its version is current', async () => {
  const due = await harness({ start: '2026-03-02T09:00:00.000Z' });
  expect((await planDueSlots(due.engine.services)).planned).toHaveLength(1);

  // The pass reads the definition active; by its planning transaction it is paused: nothing is planned.
  const moved = await harness({ start: '2026-03-02T09:00:00.000Z' });
  pauseBeforeFirstTransaction(moved);
  const errors: Error[] = [];
  expect((await planDueSlots(moved.engine.services, errors)).planned).toEqual([]);
  expect(errors).toEqual([]);
  expect(await moved.read.occurrences()).toEqual([]);
});

/** Counts the definition and plan-cursor records read outside transactions (what a pass reads to find due definitions). */
function countDefinitionReads(h: Harness): { reads: string[] } {
  const counted = { reads: [] as string[] };
  const read = h.store.read.bind(h.store);
  h.store.read = <R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> =>
    read((reader) =>
      body(
        watched(reader, (method, kind, id) => {
          if (kind === 'definition' || kind === 'plan-cursor')
            counted.reads.push(`${method} ${kind} ${String(id ?? '')}`);
        }),
      ),
    );
  return counted;
}

test('a pass reads again only the definitions and plan cursors whose version moved, and plans a revision by its new terms', async () => {
  const h = await harness({ start: '2026-03-02T08:30:00.000Z' });
  const second = (revision: number, lifecycleState: 'draft' | 'paused', hour: number) => ({
    definition: definitionBody('second', { revision, lifecycleState, rrule: `FREQ=DAILY;BYHOUR=${hour}` }),
  });
  await h.ok(command('definition.create.v1', second(1, 'draft', 9)));
  await h.ok(command('definition.revise.v1', second(2, 'paused', 9), { expectedRevision: 1 }));
  await h.ok(command('definition.activate.v1', { automationId: 'second' }, { expectedRevision: 2 }));
  const counted = countDefinitionReads(h);

  expect((await planDueSlots(h.engine.services)).planned).toEqual([]);
  expect(counted.reads).toEqual(['get definition daily', 'get definition second']);
  counted.reads.length = 0;
  h.clock.advance({ minutes: 10 });
  expect((await planDueSlots(h.engine.services)).planned).toEqual([]);
  expect(counted.reads).toEqual([]);

  // Revised while active, to 10:00: only it is read again, and 09:00 is no longer its slot.
  await h.ok(
    command(
      'definition.revise.v1',
      {
        definition: definitionBody('second', { revision: 4, lifecycleState: 'active', rrule: 'FREQ=DAILY;BYHOUR=10' }),
      },
      { expectedRevision: 3 },
    ),
  );
  h.clock.set(new Date('2026-03-02T09:00:00.000Z'));
  expect((await planDueSlots(h.engine.services)).planned).toEqual([`daily-${Date.parse('2026-03-02T09:00:00.000Z')}`]);
  expect(counted.reads).toEqual(['get definition second']);
  counted.reads.length = 0;
  h.clock.set(new Date('2026-03-02T10:00:00.000Z'));
  const tenOClock = `second-${Date.parse('2026-03-02T10:00:00.000Z')}`;
  expect((await planDueSlots(h.engine.services)).planned).toEqual([tenOClock]);
  // Planning at 09:00 moved daily's cursor, and the engine learned the version it committed: nothing to read.
  expect(counted.reads).toEqual([]);
  counted.reads.length = 0;
  // A cursor moved by someone else (another engine on the store) is read again, and only it.
  await h.store.transact(async (tx) => {
    const cursor = (await tx.get<{ lastSlot: string }>('plan-cursor', 'second'))!;
    await tx.put(
      'plan-cursor',
      'second',
      { lastSlot: '2026-03-03T10:00:00.000Z' },
      { expectedVersion: cursor.version },
    );
  });
  h.clock.set(new Date('2026-03-03T10:00:00.000Z'));
  expect((await planDueSlots(h.engine.services)).planned).toEqual([`daily-${Date.parse('2026-03-03T09:00:00.000Z')}`]);
  expect(counted.reads).toEqual(['get plan-cursor second']);
  const occurrence = await h.store.read((r) =>
    r.get<{ attributes: { automationRevision: number } }>('occurrence', tenOClock),
  );
  expect(occurrence?.data.attributes.automationRevision).toBe(4);
});

test('the definition directory forgets a definition the store no longer holds, and reads whole pages when most changed', async () => {
  const h = await harness();
  const daily = (await h.store.read((r) => r.get('definition', 'daily')))!;
  const store = new MemoryStore();
  const ids = Array.from({ length: 1200 }, (_, i) => `def-${String(i).padStart(4, '0')}`);
  await store.transact(async (tx) => {
    for (const id of ids) await tx.put('definition', id, daily.data, { expectedVersion: null });
  });
  const directory = new DefinitionDirectory();
  const lists: unknown[] = [];
  const reader = (r: StoreReader): StoreReader =>
    watched(r, (method, _kind, options) => method === 'list' && lists.push(options));
  expect((await store.read((r) => directory.current(reader(r)))).map((d) => d.id)).toEqual(ids);
  // 1200 unknown definitions: three pages of 500, not 1200 reads.
  expect(lists).toHaveLength(3);
  await store.transact((tx) => tx.delete('definition', 'def-0001', 1));
  const after = await store.read((r) => directory.current(r));
  expect(after.map((d) => d.id)).toEqual(ids.filter((id) => id !== 'def-0001'));
  expect(after[0]).toMatchObject({
    id: 'def-0000',
    version: 1,
    state: 'active',
    terms: { automationId: 'daily', revision: 3 },
  });
});
