import { describe, expect, test } from 'vitest';
import { StoreConflictError, TerminalRecordError } from '../../src/store/store.js';
import { describeCommitNoticeConformance } from './commit-notice-conformance.js';
import { describeLiveWorkConformance } from './live-work-conformance.js';
import { describeLogConformance } from './log-conformance.js';
import { using, type StoreHarness } from './store-harness.js';
import { describeStagedWritesConformance } from './staged-writes-conformance.js';
import { describeTimelineConformance } from './timeline-conformance.js';

export type { StoreHarness } from './store-harness.js';

/** The behaviour every Store implementation must show; each implementation runs this suite. */
export function describeStoreConformance(name: string, harness: StoreHarness): void {
  describeLiveWorkConformance(name, harness);
  describeStagedWritesConformance(name, harness);
  describeTimelineConformance(name, harness);
  describeLogConformance(name, harness);
  describeCommitNoticeConformance(name, harness);
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

    test('data reads back as written, key order, escapes and non-ASCII text kept: a job alone and jobs in a group', async () => {
      await using(await harness.create(), async (store) => {
        const data = (n: number) => ({
          z: n,
          a: { y: 'quote " back \\ slash', b: ['é', '😀', "it's", 'tab\t line\n'] },
          m: null,
        });
        const job = (n: number) =>
          store.transact(async (tx) => {
            const first = await tx.put('run', `r${n}`, data(n), { expectedVersion: null });
            await tx.put('run', `r${n}`, data(n + 100), { expectedVersion: first.version });
            await tx.put('outbox', `o${n}`, data(n + 200), { expectedVersion: null });
            await tx.append(`run/r${n}`, data(n + 300));
          });
        await job(0);
        await Promise.all([1, 2, 3].map(job));
        await store.read(async (r) => {
          for (const n of [0, 1, 2, 3]) {
            expect(JSON.stringify((await r.get('run', `r${n}`))?.data)).toBe(JSON.stringify(data(n + 100)));
            expect(JSON.stringify((await r.get('outbox', `o${n}`))?.data)).toBe(JSON.stringify(data(n + 200)));
            expect((await r.readLog(`run/r${n}`)).map((e) => JSON.stringify(e.data))).toEqual([
              JSON.stringify(data(n + 300)),
            ]);
          }
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
  });
}
