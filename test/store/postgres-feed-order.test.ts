import pg from 'pg';
import { beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { StoreConflictError, type LogEntry, type LogPosition } from '../../src/store/store.js';
import { describePostgres, freshDatabase, untilCommitted } from '../support/postgres.js';

const WRITERS = 4;
const READERS = 2;
const COMMITS_PER_WRITER = 40;
const SHARED_STREAMS = 3;
const BUMP_EVERY = 5;

/** Follows the feed the way a changefeed client does: always after the last position it saw. */
async function follow(store: PostgresStore, done: () => boolean): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const finished = done();
    const page = await store.read((r) => r.readFeed({ after: seen.at(-1) ?? -1 }));
    // Each page is strictly increasing and after the cursor (else the reader saw an order it cannot keep).
    for (const entry of page) {
      expect(entry.position).toBeGreaterThan(seen.at(-1) ?? -1);
      seen.push(entry.position);
    }
    // One more read after the writers finished, so the reader has caught up with everything committed.
    if (finished && page.length === 0) return seen;
  }
}

describePostgres('PostgreSQL feed order under contention', (socketDir) => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'feed_order');
  });

  test('several stores writing at once: gapless streams, and no reader ever sees a position before an earlier one', async () => {
    const open = () => PostgresStore.open(url, { schema: 'contention', poolSize: 2 });
    const writers = await Promise.all(Array.from({ length: WRITERS }, open));
    const readers = await Promise.all(Array.from({ length: READERS }, open));
    let losses = 0;
    let writing = true;
    const following = readers.map((r) => follow(r, () => !writing));
    const write = async (store: PostgresStore, w: number) => {
      for (let i = 0; i < COMMITS_PER_WRITER; i++) {
        await untilCommitted(async () => {
          try {
            return await store.transact(async (tx) => {
              await tx.append(`writer/${w}`, { w, i });
              // Reads between taking a position and committing: the window in which a later position could
              // otherwise commit first.
              await tx.readLog(`writer/${w}`, { after: i - 2 });
              await tx.append(`shared/${(w + i) % SHARED_STREAMS}`, { w, i });
              if (i % BUMP_EVERY !== 0) return;
              // A counter writers bump by compare-and-set now and then: lost updates would show in its value.
              const counter = await tx.get<{ n: number }>('counter', 'c');
              await tx.put(
                'counter',
                'c',
                { n: (counter?.data.n ?? 0) + 1 },
                { expectedVersion: counter?.version ?? null },
              );
            });
          } catch (error) {
            losses++;
            throw error;
          }
        });
      }
    };
    const started = performance.now();
    await Promise.all(writers.map(write));
    const elapsed = performance.now() - started;
    writing = false;
    const seenByReaders = await Promise.all(following);
    const feed = await readers[0]!.read((r) => r.readFeed<{ w: number; i: number }>());
    const total = WRITERS * COMMITS_PER_WRITER;
    console.log(
      `${WRITERS} stores, ${total} commits (2 appends each, every ${BUMP_EVERY}th a counter bump) in ${elapsed.toFixed(0)} ms; ` +
        `${losses} lost races retried; readers saw ${seenByReaders.map((s) => s.length).join(', ')} entries`,
    );
    expect(feed).toHaveLength(2 * total);
    // What each reader saw while the writers ran is exactly the final feed: nothing was seen out of order,
    // nothing skipped and filled in later.
    for (const seen of seenByReaders) expect(seen).toEqual(feed.map((e) => e.position));
    const byStream = new Map<string, Array<LogEntry<{ w: number; i: number }>>>();
    for (const entry of feed) byStream.set(entry.stream, [...(byStream.get(entry.stream) ?? []), entry]);
    for (const [stream, entries] of byStream) {
      // Gapless from 0 in feed order: sequence order and commit order agree.
      expect(
        entries.map((e) => e.sequence),
        stream,
      ).toEqual(entries.map((_, k) => k));
    }
    for (let w = 0; w < WRITERS; w++)
      expect(byStream.get(`writer/${w}`)!.map((e) => e.data.i)).toEqual([...Array(COMMITS_PER_WRITER).keys()]);
    const counter = await readers[0]!.read((r) => r.get<{ n: number }>('counter', 'c'));
    const bumps = WRITERS * Math.ceil(COMMITS_PER_WRITER / BUMP_EVERY);
    expect(counter).toMatchObject({ version: bumps, data: { n: bumps } });
    await Promise.all([...writers, ...readers].map((s) => s.close()));
  }, 120_000);

  test("a store's append does not wait for another store's open one; readers are held at the older one's horizon", async () => {
    const [first, second, reader] = await Promise.all(
      [0, 1, 2].map(() => PostgresStore.open(url, { schema: 'horizon_order' })),
    );
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const firstAppended = new Promise<void>((resolve) => (appended = resolve));
    const firstCommit = first!.transact(async (tx) => {
      const entry = await tx.append('stream/a', { who: 'first' });
      appended();
      await held;
      return entry;
    });
    await firstAppended;
    // No lock between them: the second store commits while the first's transaction is still open.
    const b = await second!.transact((tx) => tx.append('stream/b', { who: 'second' }));
    expect(await waitingOnLock(url)).toBe(0);
    // Committed, yet not served: the first's open transaction may still commit a lower position.
    expect(await reader!.read((r) => r.readFeed())).toEqual([]);
    release();
    const a = await firstCommit;
    expect(a.position).toBeLessThan(b.position);
    expect((await reader!.read((r) => r.readFeed())).map((e) => e.stream)).toEqual(['stream/a', 'stream/b']);
    await Promise.all([first, second, reader].map((s) => s!.close()));
  });

  test('in one group, a failed transaction commits none of the entries it appended; a body that swallows a database error is still rolled back', async () => {
    const store = await PostgresStore.open(url, { schema: 'grouped' });
    const attempt = (sessionId: string) => ({ snapshot: { context: { sessionId } } });
    await store.transact(async (tx) => {
      await tx.put('attempt', 'bound', attempt('s-1'), { expectedVersion: null });
      await tx.put('attempt', 'free', attempt('s-2'), { expectedVersion: null });
    });
    const results = await Promise.allSettled([
      store.transact((tx) => tx.append('s/1', { n: 1 })),
      store.transact(async (tx) => {
        await tx.append('s/2', { n: 2 });
        throw new Error('boom');
      }),
      store.transact(async (tx) => {
        await tx.append('s/3', { n: 3 });
        // The database refuses this (one session, one attempt) and aborts the transaction; the body carries on.
        await tx.put('attempt', 'free', attempt('s-1'), { expectedVersion: 1 }).catch(() => undefined);
        return 'carried on';
      }),
      store.transact((tx) => tx.append('s/4', { n: 4 })),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
    const feed = await store.read((r) => r.readFeed());
    // The rolled-back jobs' positions are not reused (positions may have gaps); nothing of them was committed.
    const kept = [results[0], results[3]].map((r) => (r as PromiseFulfilledResult<LogPosition>).value);
    expect(feed).toEqual([
      { ...kept[0], data: { n: 1 } },
      { ...kept[1], data: { n: 4 } },
    ]);
    expect(kept[0]!.position).toBeLessThan(kept[1]!.position);
    expect(await store.read((r) => r.get('attempt', 'free'))).toMatchObject({ version: 1 });
    await store.close();
  });
});

/** How many sessions of the test's database wait on an advisory lock now. */
async function waitingOnLock(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}
