import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, expect, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { Store, StoreTransaction } from '../../src/store/store.js';
import { propertyParameters } from '../support/property.js';

// The SQLite writer remembers records, absences, stream heads and the feed position across statements,
// transactions and the savepoints of one grouped commit. The memory store remembers nothing beyond its
// committed state, so it is the model: every operation must answer the same on both, and both must end equal.

const dir = mkdtempSync(join(tmpdir(), 'coven-writer-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

type Op =
  | { op: 'get'; kind: string; id: string }
  | { op: 'put'; kind: string; id: string; n: number; versionDelta: number; terminal: boolean }
  | { op: 'delete'; kind: string; id: string; versionDelta: number }
  | { op: 'append'; stream: string; n: number }
  | { op: 'head'; stream: string };
/** One transaction; `abort` throws after its operations, so everything it did must roll back. */
type Txn = { ops: Op[]; abort: boolean };

const kind = fc.constantFrom('occurrence', 'run');
const id = fc.constantFrom('a', 'b', 'c');
const stream = fc.constantFrom('occurrence/a', 'run/b');
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('get' as const), kind, id }),
  // versionDelta 0 writes at the current version; ±1 is a stale or future one, so refusals happen too.
  fc.record({
    op: fc.constant('put' as const),
    kind,
    id,
    n: fc.integer({ min: 0, max: 99 }),
    versionDelta: fc.constantFrom(0, 0, 0, -1, 1),
    terminal: fc.constantFrom(false, false, false, false, false, true),
  }),
  fc.record({ op: fc.constant('delete' as const), kind, id, versionDelta: fc.constantFrom(0, 0, 1) }),
  fc.record({ op: fc.constant('append' as const), stream, n: fc.integer({ min: 0, max: 99 }) }),
  fc.record({ op: fc.constant('head' as const), stream }),
);
const txn: fc.Arbitrary<Txn> = fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 6 }), abort: fc.boolean() });
/** Rounds of transactions; the transactions of one round are queued together, so SQLite groups them. */
const rounds = fc.array(fc.array(txn, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 });

async function apply(tx: StoreTransaction, o: Op): Promise<unknown> {
  try {
    switch (o.op) {
      case 'get': {
        const r = await tx.get(o.kind, o.id);
        return r === undefined ? null : { version: r.version, terminal: r.terminal, data: r.data };
      }
      case 'put': {
        const current = await tx.get(o.kind, o.id);
        const expected =
          current === undefined ? (o.versionDelta === 0 ? null : o.versionDelta + 1) : current.version + o.versionDelta;
        const r = await tx.put(
          o.kind,
          o.id,
          { n: o.n },
          { expectedVersion: expected === 0 ? null : expected, terminal: o.terminal },
        );
        return { version: r.version, terminal: r.terminal };
      }
      case 'delete': {
        const current = await tx.get(o.kind, o.id);
        await tx.delete(o.kind, o.id, (current?.version ?? 1) + o.versionDelta);
        return 'deleted';
      }
      case 'append': {
        const e = await tx.append(o.stream, { n: o.n });
        return { sequence: e.sequence, position: e.position };
      }
      case 'head':
        return await tx.head(o.stream);
    }
  } catch (error) {
    // The error's class is the contract; the wording may differ between stores.
    return `refused: ${(error as Error).constructor.name}`;
  }
}

async function run(store: Store, plan: Txn[][]): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const round of plan) {
    const outcomes = await Promise.all(
      round.map((t) =>
        store
          .transact(async (tx) => {
            const seen: unknown[] = [];
            for (const o of t.ops) seen.push(await apply(tx, o));
            if (t.abort) throw Object.assign(new Error('abort'), { seen });
            return seen;
          })
          .then(
            (seen) => ({ committed: seen }),
            (error: Error & { seen?: unknown[] }) => ({ rolledBack: error.seen }),
          ),
      ),
    );
    answers.push(...outcomes);
  }
  const state = await store.read(async (r) => ({
    records: await Promise.all(
      ['occurrence', 'run'].map(async (k) => (await r.list(k)).map((x) => [x.id, x.version, x.terminal, x.data])),
    ),
    logs: await Promise.all(
      ['occurrence/a', 'run/b'].map(async (s) => (await r.readLog(s)).map((e) => [e.sequence, e.position, e.data])),
    ),
  }));
  answers.push(state);
  return answers;
}

test('the SQLite store with its writer cache answers every operation as the memory store does', async () => {
  await fc.assert(
    fc.asyncProperty(rounds, async (plan) => {
      const model = await run(new MemoryStore(), plan);
      const sqlite = await SqliteStore.open(join(dir, `cache-${files++}.sqlite`));
      try {
        expect(await run(sqlite, plan)).toEqual(model);
      } finally {
        await sqlite.close();
      }
    }),
    propertyParameters('sqlite writer cache agrees with the memory store', 60),
  );
}, 120_000);
