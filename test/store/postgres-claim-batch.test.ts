import fc from 'fast-check';
import { afterEach, beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describePostgres, freshDatabase } from '../support/postgres.js';
import { propertyParameters } from '../support/property.js';

const NOW = '2026-01-01T09:00:00.000Z';
const minute = (m: number) => new Date(Date.parse(NOW) + m * 60_000).toISOString();

const occurrence = (automationId: string, state: string, scheduledFor: string, notBefore?: string) => ({
  snapshot: { value: state, context: { automationId, fence: { generation: 1, leaseExpiresAt: null } } },
  attributes: { scheduledFor, automationRevision: 1, ...(notBefore === undefined ? {} : { notBefore }) },
});

describePostgres('PostgreSQL store: set-based claims', (socketDir) => {
  let url: string;
  const opened: PostgresStore[] = [];
  const open = async (schema: string) => {
    const store = await PostgresStore.open(url, { schema });
    opened.push(store);
    return store;
  };
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'claim_batch');
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  test('one statement locks the earliest due occurrences; a second engine takes the others, never the same', async () => {
    const [a, b] = [await open('burst'), await open('burst')];
    await a.transact(async (tx) => {
      for (let i = 0; i < 10; i++) {
        const state = i % 2 === 0 ? 'planned' : 'eligible';
        await tx.put('occurrence', `due-${i}`, occurrence(`a${i}`, state, minute(-10 + i)), { expectedVersion: null });
      }
      await tx.put('occurrence', 'later', occurrence('b', 'planned', minute(5)), { expectedVersion: null });
      await tx.put('occurrence', 'backing-off', occurrence('c', 'planned', minute(-20), minute(3)), {
        expectedVersion: null,
      });
      await tx.put('occurrence', 'claimed', occurrence('d', 'claimed', minute(-30)), { expectedVersion: null });
      await tx.put('occurrence', 'settled', occurrence('e', 'succeeded', minute(-30)), {
        expectedVersion: null,
        terminal: true,
      });
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let first: string[] = [];
    let locked!: () => void;
    const firstLocked = new Promise<void>((resolve) => (locked = resolve));
    const engineA = a.transact(async (tx) => {
      first = await tx.lockDueOccurrences!(NOW, 4, []);
      locked();
      await held;
    });
    await firstLocked;
    // While the first engine's transaction holds its batch, the second is not kept waiting: it takes the rest.
    const second = await b.transact((tx) => tx.lockDueOccurrences!(NOW, 100, []));
    release();
    await engineA;
    expect(first).toEqual(['due-0', 'due-1', 'due-2', 'due-3']);
    expect(second).toEqual(['due-4', 'due-5', 'due-6', 'due-7', 'due-8', 'due-9']);
    // Ids a pass already took are passed over.
    expect(await a.transact((tx) => tx.lockDueOccurrences!(NOW, 3, ['due-0', 'due-2']))).toEqual([
      'due-1',
      'due-3',
      'due-4',
    ]);
  });

  // A pass asks in a read whether the claim would take anything before it queues the claim's write transaction:
  // if the two disagreed, due work would wait for the one-occurrence path (or idle passes would claim for nothing).
  test("another live engine's share is left to it: its automations' occurrences are not locked", async () => {
    const store = await open('shares');
    await store.transact(async (tx) => {
      for (const automation of ['mine-1', 'theirs-1', 'mine-2', 'theirs-2'])
        await tx.put('occurrence', `due-${automation}`, occurrence(automation, 'planned', minute(-1)), {
          expectedVersion: null,
        });
    });
    const locked = await store.transact((tx) => tx.lockDueOccurrences!(NOW, 10, [], ['theirs-1', 'theirs-2']));
    expect(locked.sort()).toEqual(['due-mine-1', 'due-mine-2']);
    const all = await store.transact((tx) => tx.lockDueOccurrences!(NOW, 10, []));
    expect(all).toHaveLength(4);
  });

  test('the read a pass asks first agrees with the claim statement, for any mix of states and instants', async () => {
    const states = ['planned', 'eligible', 'claimed', 'dispatching', 'running', 'recovery_required'];
    const instant = fc.integer({ min: -5, max: 5 }).map(minute);
    const row = fc.record({ state: fc.constantFrom(...states), at: instant, notBefore: fc.option(instant) });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 8 }), async (rows) => {
        const store = await open(`gate_${round++}`);
        await store.transact(async (tx) => {
          for (const [i, r] of rows.entries()) {
            const data = occurrence(`a${i}`, r.state, r.at, r.notBefore ?? undefined);
            await tx.put('occurrence', `o${i}`, data, { expectedVersion: null });
          }
        });
        const asked = await store.read((r) => r.hasDueOccurrences!(NOW));
        const claimed = await store.transact((tx) => tx.lockDueOccurrences!(NOW, 100, []));
        expect(asked).toBe(claimed.length > 0);
        opened.splice(opened.indexOf(store), 1);
        await store.close();
      }),
      propertyParameters('a pass’s due probe = the claim statement', 30),
    );
    // Each run opens a store on a schema of its own (its migrations included): seconds on a loaded CI machine.
  }, 120_000);
});
