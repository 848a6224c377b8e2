import { describe, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { DIAGNOSTIC_COMMANDS, QUERY_COMMANDS } from '../../src/command-handler/envelope.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { KINDS } from '../../src/domain/records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { command, expectRejected, expectValidResponse } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

async function read(h: Harness, name: string, payload: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = expectValidResponse(await h.engine.commands.handle(command(name, payload)));
  expect(response.outcome, JSON.stringify(response.error)).toBe('committed');
  return response.result!;
}

const ids = (result: Record<string, unknown>) =>
  (result.occurrences as Array<{ occurrenceId: string }>).map((o) => o.occurrenceId);

describe('the read-only diagnostics', () => {
  test('are reads: committed, their adoption key echoed and never stored, so the same key answers again', async () => {
    const h = await harness();
    for (const name of DIAGNOSTIC_COMMANDS) expect(QUERY_COMMANDS.has(name)).toBe(true);
    const envelope = command('scheduler.status.v1', {});
    const first = expectValidResponse(await h.engine.commands.handle(envelope));
    const again = expectValidResponse(await h.engine.commands.handle(envelope));
    expect([first.outcome, again.outcome]).toEqual(['committed', 'committed']);
    expect(again.adoptionKey).toBe(envelope.adoptionKey);
    const adoptions = await h.store.read((r) => r.list('adoption'));
    expect(adoptions.map((a) => a.id)).not.toContain(envelope.adoptionKey);
  });

  test('work on a command handler without an engine, reading the store it was given', async () => {
    const handler = new CommandHandler({ store: new MemoryStore(), clock: new SimulatedClock(at('09:00:00')) });
    const listed = expectValidResponse(await handler.handle(command('occurrence.list.v1', { view: 'due' })));
    expect(listed).toMatchObject({ outcome: 'committed', result: { view: 'due', occurrences: [] } });
    const status = expectValidResponse(await handler.handle(command('scheduler.status.v1', {})));
    expect(status.result).toMatchObject({ leader: null, occurrences: { live: 0, due: 0 } });
  });

  test('payloads are closed and typed: unknown fields, bad views, both or neither receipt key are refused', async () => {
    const h = await harness();
    const refused = async (name: string, payload: Record<string, unknown>) =>
      expectRejected(await h.engine.commands.handle(command(name, payload)), 'VALIDATION_FAILED', 400);
    await refused('occurrence.list.v1', { view: 'soon' });
    await refused('occurrence.list.v1', { limit: 0 });
    await refused('occurrence.list.v1', { extra: true });
    await refused('occurrence.get.v1', {});
    await refused('occurrence.get.v1', { occurrenceId: 'a b' });
    await refused('run.get.v1', { runId: 'r', attemptId: 'x' });
    await refused('receipt.get.v1', {});
    await refused('receipt.get.v1', { receiptId: 'r1', runId: 'r2' });
    await refused('scheduler.status.v1', { verbose: true });
    const withRevision = { ...command('occurrence.list.v1', {}), expectedRevision: 1 };
    expectRejected(await h.engine.commands.handle(withRevision), 'VALIDATION_FAILED', 400);
    const cursor = await h.engine.commands.handle(command('occurrence.list.v1', { cursor: 'bm90LWEtY3Vyc29y' }));
    expect(expectRejected(cursor, 'VALIDATION_FAILED', 400).error!.details).toMatchObject({ field: 'payload.cursor' });
  });

  test('unknown ids answer NOT_FOUND (404), never a crash', async () => {
    const h = await harness();
    for (const [name, payload] of [
      ['occurrence.get.v1', { occurrenceId: 'ghost' }],
      ['occurrence.history.v1', { occurrenceId: 'ghost' }],
      ['run.get.v1', { runId: 'ghost' }],
      ['receipt.get.v1', { runId: 'ghost' }],
      ['receipt.get.v1', { receiptId: 'ghost' }],
    ] as const)
      expectRejected(await h.engine.commands.handle(command(name, payload)), 'NOT_FOUND', 404);
  });

  test('occurrence.list views follow the occurrence from due to running to settled, per automation', async () => {
    const h = await harness();
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const all = await read(h, 'occurrence.list.v1', {});
    expect(all).toMatchObject({ view: 'all', cursor: { hasMore: false } });
    const [id] = ids(all);
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'running' }))).toEqual([id]);
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'due' }))).toEqual([]);
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'running', automationId: 'other' }))).toEqual([]);
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'running' }))).toEqual([]);
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'all', automationId: 'daily' }))).toEqual([id]);
  });

  test('due is a planned occurrence whose slot and backoff have passed, decided against the clock', async () => {
    const h = await harness();
    h.runtime.enqueue('transient');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    const [retrying] = await h.read.occurrences();
    expect(retrying).toMatchObject({ state: 'planned' });
    h.clock.set(at('09:00:10'));
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'due' }))).toEqual([]);
    h.clock.set(at('09:00:31'));
    expect(ids(await read(h, 'occurrence.list.v1', { view: 'due' }))).toEqual([retrying!.occurrenceId]);
    expect(await read(h, 'scheduler.status.v1', {})).toMatchObject({
      occurrences: { due: 1, oldestDueAt: at('09:00:00') },
    });
  });

  test('occurrence.list pages newest slot first with a cursor that resumes after the last one shown', async () => {
    const h = await harness();
    for (const day of ['01', '02', '03', '04', '05']) {
      h.clock.set(`2026-04-${day}T09:00:00.000Z`);
      await h.engine.tick();
      h.clock.set(`2026-04-${day}T09:02:00.000Z`);
      await h.engine.tick();
    }
    const first = await read(h, 'occurrence.list.v1', { limit: 2 });
    const firstCursor = first.cursor as { hasMore: boolean; next: string };
    expect(firstCursor.hasMore).toBe(true);
    const slots = (r: Record<string, unknown>) =>
      (r.occurrences as Array<{ scheduledFor: string }>).map((o) => o.scheduledFor.slice(8, 10));
    expect(slots(first)).toEqual(['05', '04']);
    const second = await read(h, 'occurrence.list.v1', { limit: 2, cursor: firstCursor.next });
    expect(slots(second)).toEqual(['03', '02']);
    const third = await read(h, 'occurrence.list.v1', {
      limit: 2,
      cursor: (second.cursor as { next: string }).next,
    });
    expect(slots(third)).toEqual(['01']);
    expect(third.cursor).toMatchObject({ hasMore: false });
    // A cursor issued for one view is refused by another: its positions mean another list.
    const crossed = await h.engine.commands.handle(
      command('occurrence.list.v1', { view: 'running', cursor: firstCursor.next }),
    );
    expectRejected(crossed, 'VALIDATION_FAILED', 400);
  });

  test('occurrence.get, run.get and receipt.get show the runs, attempts and a receipt that verifies', async () => {
    const h = await harness();
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    const [occurrence] = await h.read.occurrences();
    const occurrenceId = occurrence!.occurrenceId as string;
    const detail = await read(h, 'occurrence.get.v1', { occurrenceId });
    expect(detail).toMatchObject({
      occurrence: { occurrenceId, state: 'succeeded', scheduledFor: at('09:00:00'), fence: { generation: 1 } },
      runs: [{ state: 'succeeded', attempts: [{ attemptNumber: 1, state: 'succeeded', receipt: { verified: true } }] }],
      receipts: { verified: 1, unverified: 0, pending: 0 },
    });
    const runId = (detail.runs as Array<{ runId: string }>)[0]!.runId;
    expect(await read(h, 'run.get.v1', { runId })).toMatchObject({ run: { runId, attemptCount: 1 } });
    const byRun = await read(h, 'receipt.get.v1', { runId });
    expect(byRun).toMatchObject({
      receipt: { runId, outcome: { disposition: 'succeeded' } },
      verification: { verified: true, algorithm: 'sha256' },
    });
    const receiptId = (byRun.receipt as { receiptId: string }).receiptId;
    expect(await read(h, 'receipt.get.v1', { receiptId })).toEqual(byRun);
    const history = await read(h, 'occurrence.history.v1', { occurrenceId });
    const moves = (history.entries as Array<{ entity?: string; from?: string; to?: string; kind: string }>)
      .filter((e) => e.entity === 'occurrence')
      .map((e) => `${e.from}->${e.to}`);
    expect(moves).toEqual([
      'none->planned',
      'planned->eligible',
      'eligible->claimed',
      'claimed->dispatching',
      'dispatching->running',
      'running->succeeded',
    ]);
    expect((history.entries as Array<{ kind: string }>).map((e) => e.kind)).toContain('receipt.recorded');
    const positions = (history.entries as Array<{ position: number }>).map((e) => e.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  test('a receipt edited after it was sealed reads verified: false', async () => {
    const h = await harness();
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    const [run] = await h.read.runs();
    const receiptId = run!.receiptRef as string;
    // Stored receipts are immutable, so the edit is a reader that answers the receipt with one field changed.
    const tampered: Store = Object.create(h.store) as Store;
    tampered.read = (body) =>
      h.store.read((reader) =>
        body(
          new Proxy(reader, {
            get: (target, property, receiver) =>
              property !== 'get'
                ? (Reflect.get(target, property, receiver) as unknown)
                : async (kind: string, id: string) => {
                    const found = await target.get<Record<string, unknown>>(kind, id);
                    if (kind !== KINDS.receipt || found === undefined) return found;
                    return { ...found, data: { ...found.data, automationRevision: 99 } };
                  },
          }),
        ),
      );
    const handler = new CommandHandler({ store: tampered, clock: h.clock });
    const readTampered = async (name: string, payload: Record<string, unknown>) =>
      expectValidResponse(await handler.handle(command(name, payload))).result!;
    expect((await read(h, 'receipt.get.v1', { receiptId })).verification).toMatchObject({ verified: true });
    const got = await readTampered('receipt.get.v1', { receiptId });
    expect(got.verification).toMatchObject({ verified: false });
    const detail = await readTampered('occurrence.get.v1', { occurrenceId: run!.occurrenceId as string });
    expect(detail.receipts).toMatchObject({ verified: 0, unverified: 1 });
  });

  test('recovery_required and scheduler.status: the occurrence waiting for the operator, counted by state', async () => {
    const h = await harness();
    h.runtime.enqueue('lost-after-side-effect');
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    h.clock.set(at('09:02:00'));
    await h.engine.tick();
    const waiting = await read(h, 'occurrence.list.v1', { view: 'recovery_required' });
    expect(waiting.occurrences).toMatchObject([{ state: 'recovery_required' }]);
    const status = await read(h, 'scheduler.status.v1', {});
    expect(status).toMatchObject({
      asOf: at('09:02:00'),
      occurrences: { live: 1, byState: { recovery_required: 1 }, due: 0 },
      planning: [{ automationId: 'daily', lastPlannedSlot: at('09:00:00') }],
    });
    expect(status.leader).toMatchObject({ instanceId: 'engine-a', live: true });
  });
});
