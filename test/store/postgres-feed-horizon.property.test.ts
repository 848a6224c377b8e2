import fc from 'fast-check';
import { beforeAll, expect, test } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import type { LogEntry } from '../../src/store/store.js';
import { describePostgres, freshDatabase, untilCommitted } from '../support/postgres.js';
import { propertyParameters } from '../support/property.js';

/** CI's runs; COVEN_STRESS=1 runs many more (FC_RUNS sets the number). */
const RUNS = process.env.COVEN_STRESS === '1' ? 25 : 3;
/** How long a transaction held open waits for some other writer's commit before it goes on regardless. */
const HOLD_DEADLINE_MS = 300;
const READERS = 2;
/** Readers page through the feed, so a cursor lands inside what one commit appended too. */
const PAGE = 5;

interface Commit {
  /** Streams appended to, in order: 0 is the writer's own, 1 and 2 are shared by every writer. */
  readonly streams: number[];
  /** Reads between appends, widening the window between taking a position and committing. */
  readonly reads: number;
  /** Stays open until another writer commits (or the hold deadline passes): a later transaction commits first. */
  readonly holdOpen: boolean;
  /** Throws after appending: its positions are taken and never committed. */
  readonly rollback: boolean;
}

const commitArb: fc.Arbitrary<Commit> = fc.record({
  streams: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }),
  reads: fc.integer({ min: 0, max: 2 }),
  holdOpen: fc.boolean(),
  rollback: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
});
const planArb = fc.array(fc.array(commitArb, { minLength: 4, maxLength: 10 }), { minLength: 2, maxLength: 4 });

type Payload = { w: number; c: number; k: number };

class Rollback extends Error {}

/** Counts commits and lets a held transaction wait for the next one, bounded by a deadline. */
class CommitCounter {
  private waiters: Array<() => void> = [];
  committed(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
  next(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, HOLD_DEADLINE_MS);
      this.waiters.push(() => (clearTimeout(timer), resolve()));
    });
  }
}

/** Follows the feed as a changefeed client does; every page is checked against the cursor it was read after. */
async function follow(store: PostgresStore, done: () => boolean): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const finished = done();
    const cursor = seen.at(-1) ?? -1;
    const page = await store.read((r) => r.readFeed({ after: cursor, limit: PAGE }));
    for (const entry of page) {
      expect(entry.position).toBeGreaterThan(seen.at(-1) ?? -1);
      seen.push(entry.position);
    }
    if (finished && page.length === 0) return seen;
  }
}

describePostgres('PostgreSQL feed horizon, several writers at once (property)', (socketDir) => {
  let url: string;
  let runs = 0;
  beforeAll(async () => {
    url = await freshDatabase(socketDir, 'feed_horizon');
  });

  test('no reader sees a position and later a committed lower one; every commit is served once, in order', async () => {
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        const schema = `horizon_${runs++}`;
        const open = () => PostgresStore.open(url, { schema, poolSize: 2 });
        const writers = await Promise.all(plan.map(open));
        const readers = await Promise.all(Array.from({ length: READERS }, open));
        const counter = new CommitCounter();
        const acknowledged = new Set<string>();
        let writing = true;
        const following = readers.map((r) => follow(r, () => !writing));
        const write = async (store: PostgresStore, w: number) => {
          for (const [c, commit] of plan[w]!.entries()) {
            try {
              await untilCommitted(() =>
                store.transact(async (tx) => {
                  for (const [k, s] of commit.streams.entries()) {
                    await tx.append<Payload>(s === 0 ? `writer/${w}` : `shared/${s}`, { w, c, k });
                    for (let i = 0; i < commit.reads; i++) await tx.readLog(`shared/${(s % 2) + 1}`, { limit: 2 });
                  }
                  if (commit.holdOpen) await counter.next();
                  if (commit.rollback) throw new Rollback();
                }),
              );
              acknowledged.add(`${w}/${c}`);
              counter.committed();
            } catch (error) {
              if (!(error instanceof Rollback)) throw error;
            }
          }
        };
        try {
          await Promise.all(writers.map(write));
        } finally {
          writing = false;
        }
        const seenByReaders = await Promise.all(following);
        const feed = await readers[0]!.read((r) => r.readFeed<Payload>());
        // Nothing skipped and filled in later: what each reader saw while the writers ran is the final feed.
        for (const seen of seenByReaders) expect(seen).toEqual(feed.map((e) => e.position));
        checkFeed(feed, plan, acknowledged);
        await Promise.all([...writers, ...readers].map((s) => s.close()));
      }),
      propertyParameters('postgres feed horizon', RUNS),
    );
  }, 600_000);
});

/** Every acknowledged commit's appends are there once, no rolled-back one's; each stream is gapless in feed order. */
function checkFeed(feed: Array<LogEntry<Payload>>, plan: Commit[][], acknowledged: Set<string>): void {
  const expected = [...acknowledged].flatMap((key) => {
    const [w, c] = key.split('/').map(Number) as [number, number];
    return plan[w]![c]!.streams.map((_, k) => `${w}/${c}/${k}`);
  });
  expect(feed.map((e) => `${e.data.w}/${e.data.c}/${e.data.k}`).sort()).toEqual(expected.sort());
  const byStream = new Map<string, number[]>();
  for (const entry of feed) byStream.set(entry.stream, [...(byStream.get(entry.stream) ?? []), entry.sequence]);
  for (const [stream, sequences] of byStream) expect(sequences, stream).toEqual(sequences.map((_, i) => i));
}
