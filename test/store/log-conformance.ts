import { describe, expect, test } from 'vitest';
import { Given } from './given-positions.js';
import {
  LogRetireError,
  LogTrimError,
  StreamSequenceError,
  TerminalRecordError,
  type LogPosition,
  type Store,
} from '../../src/store/store.js';
import { using, type StoreHarness } from './store-harness.js';

/** One commit: `count` entries to occurrence/o, then one holding `data` to `other`; each place noted in `p`. */
async function appendThen(store: Store, p: Given, count: number, other: string, data: unknown): Promise<void> {
  await store.transact(async (tx) => {
    for (let i = 0; i < count; i++) p.note(await tx.append('occurrence/o', { i }));
    p.note(await tx.append(other, data));
  });
}

/** How every Store keeps its streams and its feed: gapless sequences, global positions, trims and retirements. */
export function describeLogConformance(name: string, harness: StoreHarness): void {
  const given = () => new Given(harness.gappedPositions === true);
  describe(`${name} log conformance`, () => {
    test('an append expecting a new stream (sequence 0) on one with entries is refused whole, whatever else the job wrote', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact((tx) => tx.append('run/r', { i: 0 }));
        const refused = store.transact(async (tx) => {
          await tx.put('run', 'r2', { n: 1 }, { expectedVersion: null });
          await tx.append('occurrence/fresh', { i: 'kept?' }, 0);
          await tx.append('run/r', { i: 'doubled?' }, 0);
        });
        await expect(refused).rejects.toBeInstanceOf(StreamSequenceError);
        await store.read(async (r) => {
          expect((await r.readLog<{ i: unknown }>('run/r')).map((e) => [e.sequence, e.data.i])).toEqual([[0, 0]]);
          expect(await r.head('occurrence/fresh')).toBe(0);
          expect(await r.get('run', 'r2')).toBeUndefined();
        });
        // A stream that is new takes its first entry at sequence 0.
        const first = await store.transact((tx) => tx.append('occurrence/fresh', { i: 'first' }, 0));
        expect(first.sequence).toBe(0);
      });
    });

    test('streams get gapless sequences from 0 and the feed increasing global positions', async () => {
      await using(await harness.create(), async (store) => {
        const p = given();
        await store.transact(async (tx) => {
          p.note(await tx.append('automation/a', { i: 0 }));
          p.note(await tx.append('occurrence/o', { i: 1 }));
          p.note(await tx.append('automation/a', { i: 2 }));
        });
        p.note(await store.transact((tx) => tx.append('automation/a', { i: 3 }, 2)));
        p.check();
        await expect(store.transact((tx) => tx.append('automation/a', { i: 4 }, 2))).rejects.toBeInstanceOf(
          StreamSequenceError,
        );
        await store.read(async (r) => {
          expect(
            (await r.readLog<{ i: number }>('automation/a')).map((e) => [e.sequence, e.position, e.data.i]),
          ).toEqual([
            [0, p.at(0), 0],
            [1, p.at(2), 2],
            [2, p.at(3), 3],
          ]);
          expect((await r.readLog('automation/a', { after: 0, limit: 1 })).map((e) => e.sequence)).toEqual([1]);
          expect(await r.head('automation/a')).toBe(3);
          expect(await r.head('occurrence/o')).toBe(1);
          expect((await r.readFeed()).map((e) => e.position)).toEqual([0, 1, 2, 3].map((k) => p.at(k)));
          expect((await r.readFeed({ after: p.at(1) })).map((e) => e.stream)).toEqual(['automation/a', 'automation/a']);
        });
      });
    });

    test("a transaction's feed reads include its own appends, after what was committed before it", async () => {
      await using(await harness.create(), async (store) => {
        // An append answers where its entry went; the entry read back is that place with the data given.
        const entry = async (at: Promise<LogPosition>, data: unknown) => ({ ...(await at), data });
        const before = await store.transact((tx) => entry(tx.append('automation/a', { i: 0 }), { i: 0 }));
        const own = await store.transact(async (tx) => {
          const first = await entry(tx.append('occurrence/o', { i: 1 }), { i: 1 });
          const second = await entry(tx.append('automation/a', { i: 2 }), { i: 2 });
          expect(await tx.readFeed()).toEqual([before, first, second]);
          expect(await tx.readFeed({ after: before.position })).toEqual([first, second]);
          return [first, second];
        });
        expect(await store.read((r) => r.readFeed())).toEqual([before, ...own]);
      });
    });

    test('trimLog drops a stream prefix: the head, later sequences and feed positions carry on', async () => {
      await using(await harness.create(), async (store) => {
        const p = given();
        await appendThen(store, p, 4, 'automation/a', { i: 'a0' });
        await expect(store.transact((tx) => tx.trimLog('occurrence/o', 4))).rejects.toBeInstanceOf(LogTrimError);
        // A failed transaction's trim is rolled back with the rest of it.
        await expect(
          store.transact(async (tx) => {
            await tx.trimLog('occurrence/o', 3);
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        expect(await store.read((r) => r.readLog('occurrence/o'))).toHaveLength(4);
        const dropped = await store.transact(async (tx) => {
          const n = await tx.trimLog('occurrence/o', 3);
          // The transaction sees its own trim.
          expect((await tx.readLog('occurrence/o')).map((e) => e.sequence)).toEqual([3]);
          expect((await tx.readFeed()).map((e) => e.position)).toEqual([p.at(3), p.at(4)]);
          return n;
        });
        expect(dropped).toBe(3);
        p.note(await store.transact((tx) => tx.append('occurrence/o', { i: 4 }, 4)));
        p.check();
        await store.read(async (r) => {
          expect(await r.head('occurrence/o')).toBe(5);
          expect((await r.readLog('occurrence/o')).map((e) => [e.sequence, e.position])).toEqual([
            [3, p.at(3)],
            [4, p.at(5)],
          ]);
          expect((await r.readLog('occurrence/o', { after: 3 })).map((e) => e.sequence)).toEqual([4]);
          expect((await r.readFeed()).map((e) => e.position)).toEqual([3, 4, 5].map((k) => p.at(k)));
          expect((await r.readFeed({ after: p.at(0), limit: 2 })).map((e) => e.position)).toEqual([p.at(3), p.at(4)]);
          expect((await r.readFeed({ after: p.at(4) })).map((e) => e.position)).toEqual([p.at(5)]);
        });
        expect(await store.transact((tx) => tx.trimLog('occurrence/o', 2))).toBe(0);
      });
    });

    test('retireLog removes a stream whole: it reads as never written, positions never come back', async () => {
      await using(await harness.create(), async (store) => {
        const p = given();
        await appendThen(store, p, 3, 'run/r', { i: 'r0' });
        // The feed's newest entry stays wherever it is: run/r holds it.
        await expect(store.transact((tx) => tx.retireLog('run/r'))).rejects.toBeInstanceOf(LogRetireError);
        await expect(
          store.transact(async (tx) => {
            await tx.retireLog('occurrence/o');
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        expect(await store.read((r) => r.head('occurrence/o'))).toBe(3);
        const removed = await store.transact(async (tx) => {
          const n = await tx.retireLog('occurrence/o');
          expect(await tx.head('occurrence/o')).toBe(0);
          expect(await tx.readLog('occurrence/o')).toEqual([]);
          expect((await tx.readFeed()).map((e) => e.stream)).toEqual(['run/r']);
          return n;
        });
        expect(removed).toBe(3);
        expect(await store.transact((tx) => tx.retireLog('occurrence/o'))).toBe(0);
        expect(await store.transact((tx) => tx.retireLog('occurrence/never'))).toBe(0);
        p.note(await store.transact((tx) => tx.append('automation/a', { i: 'a0' })));
        p.check();
        await store.read(async (r) => {
          expect(await r.head('occurrence/o')).toBe(0);
          expect((await r.readFeed()).map((e) => [e.stream, e.position])).toEqual([
            ['run/r', p.at(3)],
            ['automation/a', p.at(4)],
          ]);
        });
      });
    });

    if (harness.reopen !== undefined) {
      const reopen = harness.reopen;
      test('reopening after close yields exactly the committed state', async () => {
        const store = await harness.create();
        const p = given();
        await store.transact(async (tx) => {
          await tx.put('definition', 'a', { n: 1, text: 'ünïcödé \u2028 "quoted"' }, { expectedVersion: null });
          await tx.put('attempt', 'x', { state: 'failed' }, { expectedVersion: null, terminal: true });
          p.note(await tx.append('automation/a', { kind: 'definition.created' }));
          p.note(await tx.append('run/r', { kind: 'run.transitioned' }));
        });
        p.check();
        await store.transact((tx) => tx.put('definition', 'a', { n: 2, text: 'second' }, { expectedVersion: 1 }));
        await using(await reopen(store), async (again) => {
          await again.read(async (r) => {
            expect(await r.get('definition', 'a')).toMatchObject({ version: 2, data: { n: 2, text: 'second' } });
            expect(await r.get('attempt', 'x')).toMatchObject({ terminal: true });
            expect((await r.readFeed()).map((e) => [e.stream, e.sequence, e.position])).toEqual([
              ['automation/a', 0, p.at(0)],
              ['run/r', 0, p.at(1)],
            ]);
          });
          await expect(
            again.transact((tx) => tx.put('attempt', 'x', {}, { expectedVersion: 1 })),
          ).rejects.toBeInstanceOf(TerminalRecordError);
          await again.transact((tx) => tx.append('automation/a', { kind: 'definition.revised' }, 1));
        });
      });

      test('reopening keeps a retired stream retired, and positions past it', async () => {
        const store = await harness.create();
        const p = given();
        await appendThen(store, p, 2, 'run/r', { i: 'r0' });
        await store.transact(async (tx) => {
          await tx.trimLog('occurrence/o', 1);
          await tx.retireLog('occurrence/o');
        });
        await using(await reopen(store), async (again) => {
          await again.read(async (r) => {
            expect(await r.head('occurrence/o')).toBe(0);
            expect((await r.readFeed()).map((e) => [e.stream, e.position])).toEqual([['run/r', p.at(2)]]);
          });
          p.note(await again.transact((tx) => tx.append('automation/a', { i: 'a0' })));
          p.check();
          expect((await again.read((r) => r.readFeed())).map((e) => e.position)).toEqual([p.at(2), p.at(3)]);
        });
      });

      test('reopening keeps what retention removed removed: expired records, trimmed entries, positions', async () => {
        const store = await harness.create();
        const p = given();
        await store.transact(async (tx) => {
          for (let i = 0; i < 3; i++) p.note(await tx.append('occurrence/o', { i }));
          p.note(await tx.append('run/r', { i: 'r0' }));
          await tx.put('attempt', 'x', { state: 'failed' }, { expectedVersion: null, terminal: true });
        });
        await store.transact(async (tx) => {
          await tx.trimLog('occurrence/o', 2);
          await tx.expire('attempt', 'x', 1);
        });
        const again = await reopen(store);
        const reopened = await using(again, async (s) => {
          await s.read(async (r) => {
            expect(await r.get('attempt', 'x')).toBeUndefined();
            expect((await r.readFeed()).map((e) => [e.stream, e.sequence, e.position])).toEqual([
              ['occurrence/o', 2, p.at(2)],
              ['run/r', 0, p.at(3)],
            ]);
            expect(await r.head('occurrence/o')).toBe(3);
          });
          p.note(await s.transact((tx) => tx.append('occurrence/o', { i: 3 }, 3)));
          p.check();
          return reopen(s);
        });
        await using(reopened, async (s) => {
          expect((await s.read((r) => r.readFeed())).map((e) => e.position)).toEqual([2, 3, 4].map((k) => p.at(k)));
        });
      });
    }
  });
}
