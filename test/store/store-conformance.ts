import { describe, expect, test } from 'vitest';
import { Given } from './given-positions.js';
import {
  LogRetireError,
  LogTrimError,
  StoreConflictError,
  StreamSequenceError,
  TerminalRecordError,
  type LogPosition,
  type Store,
} from '../../src/store/store.js';
import { describeLiveWorkConformance } from './live-work-conformance.js';
import { describeStagedWritesConformance } from './staged-writes-conformance.js';
import { describeTimelineConformance } from './timeline-conformance.js';

export interface StoreHarness {
  /** A fresh, empty store. */
  create(): Promise<Store>;
  /** For durable stores: close `store` and open the same storage again. */
  reopen?(store: Store): Promise<Store>;
  /**
   * Feed positions strictly increase in commit order but may skip numbers (PostgreSQL takes them from
   * transaction ids). Without it they are 0, 1, 2, … in commit order.
   */
  gappedPositions?: boolean;
}

async function using<T>(store: Store, body: (store: Store) => Promise<T>): Promise<T> {
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

/** The behaviour every Store implementation must show; each implementation runs this suite. */
export function describeStoreConformance(name: string, harness: StoreHarness): void {
  const given = () => new Given(harness.gappedPositions === true);
  describeLiveWorkConformance(name, harness);
  describeStagedWritesConformance(name, harness);
  describeTimelineConformance(name, harness);
  describe(`${name} store conformance`, () => {
    test('a committed transaction is visible to later reads', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact(async (tx) => {
          await tx.put('definition', 'a', { n: 1 }, { expectedVersion: null });
          await tx.put('definition', 'b', { n: 2 }, { expectedVersion: null });
        });
        const records = await store.read((r) => r.list<{ n: number }>('definition'));
        expect(records.map((r) => [r.id, r.version, r.data.n])).toEqual([
          ['a', 1, 1],
          ['b', 1, 2],
        ]);
      });
    });

    test('a transaction that throws commits none of its writes or appends', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact((tx) => tx.put('definition', 'a', { n: 1 }, { expectedVersion: null }));
        await expect(
          store.transact(async (tx) => {
            await tx.put('definition', 'a', { n: 2 }, { expectedVersion: 1 });
            await tx.put('run', 'r', { n: 3 }, { expectedVersion: null });
            await tx.append('automation/a', { kind: 'definition.revised' });
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        await store.read(async (r) => {
          expect((await r.get<{ n: number }>('definition', 'a'))?.data.n).toBe(1);
          expect(await r.get('run', 'r')).toBeUndefined();
          expect(await r.head('automation/a')).toBe(0);
          expect(await r.readFeed()).toEqual([]);
        });
      });
    });

    test('a transaction reads its own writes before commit, others do not', async () => {
      await using(await harness.create(), async (store) => {
        let seenOutside: unknown = 'unset';
        await store.transact(async (tx) => {
          await tx.put('definition', 'a', { n: 1 }, { expectedVersion: null });
          expect((await tx.get('definition', 'a'))?.version).toBe(1);
          seenOutside = await store.read((r) => r.get('definition', 'a'));
        });
        expect(seenOutside).toBeUndefined();
      });
    });

    test('version answers what get would, without the data: own writes inside, committed data outside', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact((tx) => tx.put('definition', 'a', { n: 1 }, { expectedVersion: null }));
        await store.transact(async (tx) => {
          expect(await tx.version('definition', 'a')).toBe(1);
          await tx.put('definition', 'a', { n: 2 }, { expectedVersion: 1 });
          expect(await tx.version('definition', 'a')).toBe(2);
          expect(await store.read((r) => r.version('definition', 'a'))).toBe(1);
          await tx.put('definition', 'b', { n: 1 }, { expectedVersion: null });
          await tx.delete('definition', 'b', 1);
          expect(await tx.version('definition', 'b')).toBeUndefined();
        });
        await store.read(async (r) => {
          expect(await r.version('definition', 'a')).toBe(2);
          expect(await r.version('definition', 'missing')).toBeUndefined();
        });
      });
    });

    test('compare-and-set refuses a stale version, a duplicate create and a missing record', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact((tx) => tx.put('occurrence', 'o', { state: 'planned' }, { expectedVersion: null }));
        await store.transact((tx) => tx.put('occurrence', 'o', { state: 'eligible' }, { expectedVersion: 1 }));
        await expect(
          store.transact((tx) => tx.put('occurrence', 'o', { state: 'claimed' }, { expectedVersion: 1 })),
        ).rejects.toBeInstanceOf(StoreConflictError);
        await expect(
          store.transact((tx) => tx.put('occurrence', 'o', {}, { expectedVersion: null })),
        ).rejects.toMatchObject({
          code: 'REVISION_CONFLICT',
          details: { kind: 'occurrence', id: 'o', expectedVersion: null, currentVersion: 2 },
        });
        await expect(
          store.transact((tx) => tx.put('occurrence', 'missing', {}, { expectedVersion: 1 })),
        ).rejects.toBeInstanceOf(StoreConflictError);
        await expect(store.transact((tx) => tx.delete('occurrence', 'o', 1))).rejects.toBeInstanceOf(
          StoreConflictError,
        );
        expect((await store.read((r) => r.get<{ state: string }>('occurrence', 'o')))?.data.state).toBe('eligible');
      });
    });

    test('of two concurrent compare-and-set writers exactly one wins', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact((tx) => tx.put('occurrence', 'o', { fence: 0 }, { expectedVersion: null }));
        const claim = (who: string) =>
          store.transact(async (tx) => {
            const current = await tx.get<{ fence: number }>('occurrence', 'o');
            await Promise.resolve();
            return tx.put(
              'occurrence',
              'o',
              { fence: current!.data.fence + 1, who },
              { expectedVersion: current!.version },
            );
          });
        const results = await Promise.allSettled([claim('a'), claim('b'), claim('c')]);
        // Bodies run one at a time, so each sees the previous commit: all succeed in order, none is lost.
        expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
        expect((await store.read((r) => r.get<{ fence: number }>('occurrence', 'o')))?.data.fence).toBe(3);

        const stale = (await store.read((r) => r.get('occurrence', 'o')))!.version;
        const outcomes = await Promise.allSettled([
          store.transact((tx) => tx.put('occurrence', 'o', { fence: 10 }, { expectedVersion: stale })),
          store.transact((tx) => tx.put('occurrence', 'o', { fence: 20 }, { expectedVersion: stale })),
        ]);
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
      });
    });

    test('terminal records refuse every later update and delete', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact((tx) =>
          tx.put('attempt', 'x', { state: 'succeeded' }, { expectedVersion: null, terminal: true }),
        );
        await expect(
          store.transact((tx) => tx.put('attempt', 'x', { state: 'failed' }, { expectedVersion: 1 })),
        ).rejects.toBeInstanceOf(TerminalRecordError);
        await expect(store.transact((tx) => tx.delete('attempt', 'x', 1))).rejects.toMatchObject({
          code: 'ILLEGAL_TRANSITION',
          httpStatus: 422,
        });
        const record = await store.read((r) => r.get<{ state: string }>('attempt', 'x'));
        expect(record).toMatchObject({ version: 1, terminal: true, data: { state: 'succeeded' } });
      });
    });

    test('stored data is a frozen copy: mutating the caller object or the result changes nothing', async () => {
      await using(await harness.create(), async (store) => {
        const body = { nested: { n: 1 } };
        await store.transact((tx) => tx.put('definition', 'a', body, { expectedVersion: null }));
        body.nested.n = 99;
        const record = await store.read((r) => r.get<{ nested: { n: number } }>('definition', 'a'));
        expect(record?.data.nested.n).toBe(1);
        expect(() => {
          (record!.data.nested as { n: number }).n = 5;
        }).toThrow(TypeError);
      });
    });

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

    test('many concurrent transactions all commit, each exactly once', async () => {
      await using(await harness.create(), async (store) => {
        await Promise.all(Array.from({ length: 50 }, (_, i) => store.transact((tx) => tx.append('feed/test', { i }))));
        const entries = await store.read((r) => r.readLog<{ i: number }>('feed/test'));
        expect(entries.map((e) => e.sequence)).toEqual(Array.from({ length: 50 }, (_, i) => i));
        expect(new Set(entries.map((e) => e.data.i)).size).toBe(50);
      });
    });

    test('a closed store refuses new work', async () => {
      const store = await harness.create();
      await store.close();
      await expect(store.transact((tx) => tx.head('x'))).rejects.toMatchObject({ code: 'INTERNAL' });
    });

    test('list reads a range of ids in order: before an id, at most a limit', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact(async (tx) => {
          for (const id of ['2026-03-02|c', '2026-03-01|b', '2026-03-03|d', '2026-03-01|a'])
            await tx.put('due', id, { id }, { expectedVersion: null });
        });
        await store.read(async (r) => {
          expect((await r.list('due', { before: '2026-03-02|~' })).map((x) => x.id)).toEqual([
            '2026-03-01|a',
            '2026-03-01|b',
            '2026-03-02|c',
          ]);
          expect((await r.list('due', { before: '2026-03-02|~', limit: 2 })).map((x) => x.id)).toEqual([
            '2026-03-01|a',
            '2026-03-01|b',
          ]);
          expect((await r.list('due', { limit: 1 })).map((x) => x.id)).toEqual(['2026-03-01|a']);
          expect(await r.list('due', { before: '2026' })).toEqual([]);
          // Pages: after the last id seen, at most a limit.
          expect((await r.list('due', { after: '2026-03-01|a', limit: 2 })).map((x) => x.id)).toEqual([
            '2026-03-01|b',
            '2026-03-02|c',
          ]);
          expect((await r.list('due', { after: '2026-03-02|c' })).map((x) => x.id)).toEqual(['2026-03-03|d']);
          expect((await r.list('due', { after: '2026-03-01|a', before: '2026-03-03' })).map((x) => x.id)).toEqual([
            '2026-03-01|b',
            '2026-03-02|c',
          ]);
          expect(await r.list('due', { after: '2026-03-03|d' })).toEqual([]);
        });
        // Inside a transaction the range sees its own writes and removals.
        await store.transact(async (tx) => {
          await tx.put('due', '2026-02-28|z', {}, { expectedVersion: null });
          await tx.delete('due', '2026-03-01|a', 1);
          expect((await tx.list('due', { before: '2026-03-01|~' })).map((x) => x.id)).toEqual([
            '2026-02-28|z',
            '2026-03-01|b',
          ]);
          expect((await tx.list('due', { after: '2026-02-28|z', limit: 1 })).map((x) => x.id)).toEqual([
            '2026-03-01|b',
          ]);
        });
      });
    });

    test('versions answers what list would, as ids and versions: ranges, own writes inside, committed data outside', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact(async (tx) => {
          for (const id of ['b', 'a', 'c'])
            await tx.put('definition', id, { id, body: 'x'.repeat(100) }, { expectedVersion: null });
          await tx.put('other', 'a', {}, { expectedVersion: null });
        });
        await store.transact((tx) => tx.put('definition', 'b', { id: 'b' }, { expectedVersion: 1 }));
        const asVersions = (records: Array<{ id: string; version: number }>) =>
          records.map(({ id, version }) => ({ id, version }));
        await store.read(async (r) => {
          expect(await r.versions('definition')).toEqual([
            { id: 'a', version: 1 },
            { id: 'b', version: 2 },
            { id: 'c', version: 1 },
          ]);
          for (const options of [
            { after: 'a' },
            { before: 'c' },
            { limit: 1 },
            { after: 'a', limit: 1 },
            { after: 'c' },
          ]) {
            expect(await r.versions('definition', options)).toEqual(asVersions(await r.list('definition', options)));
          }
          expect(await r.versions('missing-kind')).toEqual([]);
        });
        let outside: unknown;
        await store.transact(async (tx) => {
          await tx.put('definition', 'a', { id: 'a' }, { expectedVersion: 1 });
          await tx.delete('definition', 'c', 1);
          await tx.put('definition', 'd', {}, { expectedVersion: null });
          expect(await tx.versions('definition')).toEqual([
            { id: 'a', version: 2 },
            { id: 'b', version: 2 },
            { id: 'd', version: 1 },
          ]);
          outside = await store.read((r) => r.versions('definition'));
        });
        // A read outside the open transaction saw only what was committed before it.
        expect(outside).toEqual([
          { id: 'a', version: 1 },
          { id: 'b', version: 2 },
          { id: 'c', version: 1 },
        ]);
      });
    });

    test('expire removes a record, sealed or not, by compare-and-set; delete still refuses a sealed one', async () => {
      await using(await harness.create(), async (store) => {
        await store.transact(async (tx) => {
          await tx.put('attempt', 'sealed', { state: 'failed' }, { expectedVersion: null, terminal: true });
          await tx.put('outbox', 'open', { status: 'done' }, { expectedVersion: null });
        });
        await expect(store.transact((tx) => tx.delete('attempt', 'sealed', 1))).rejects.toBeInstanceOf(
          TerminalRecordError,
        );
        await expect(store.transact((tx) => tx.expire('attempt', 'sealed', 2))).rejects.toBeInstanceOf(
          StoreConflictError,
        );
        await expect(store.transact((tx) => tx.expire('attempt', 'missing', 1))).rejects.toBeInstanceOf(
          StoreConflictError,
        );
        await store.transact(async (tx) => {
          await tx.expire('attempt', 'sealed', 1);
          await tx.expire('outbox', 'open', 1);
        });
        await store.read(async (r) => {
          expect(await r.get('attempt', 'sealed')).toBeUndefined();
          expect(await r.list('outbox')).toEqual([]);
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
        await store.transact(async (tx) => {
          for (let i = 0; i < 4; i++) p.note(await tx.append('occurrence/o', { i }));
          p.note(await tx.append('automation/a', { i: 'a0' }));
        });
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
        await store.transact(async (tx) => {
          for (let i = 0; i < 3; i++) p.note(await tx.append('occurrence/o', { i }));
          p.note(await tx.append('run/r', { i: 'r0' }));
        });
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
        await store.transact(async (tx) => {
          for (let i = 0; i < 2; i++) p.note(await tx.append('occurrence/o', { i }));
          p.note(await tx.append('run/r', { i: 'r0' }));
        });
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
