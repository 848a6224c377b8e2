import { describe, expect, test } from 'vitest';
import { OccurrenceState } from '../../machines/index.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { command } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';
import type { StoreReader } from '../../src/store/store.js';

const BACKFILL = 'x-coven-automata.definition.backfill.v1';
const LIVE = ['claimed', 'dispatching', 'running'];

/** The pass's reads list live work newest first (reversed), so the order it looks at waiting slots is not the slots'. */
function reverseLiveWorkReads(h: Harness): void {
  const read = h.store.read.bind(h.store);
  h.store.read = <R>(body: (reader: StoreReader) => Promise<R> | R): Promise<R> =>
    read((reader) =>
      body(
        new Proxy(reader, {
          get: (target, property) =>
            property === 'liveWork'
              ? async (...args: Parameters<StoreReader['liveWork']>) => (await target.liveWork(...args)).reverse()
              : (target as unknown as Record<PropertyKey, unknown>)[property] instanceof Function
                ? (target as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[property]!.bind(target)
                : (target as unknown as Record<PropertyKey, unknown>)[property],
        }),
      ),
    );
}

describe('x-coven-automata.definition.backfill.v1', () => {
  test.each(['as the store lists them', 'newest first'])(
    'plans each slot of a past range once, however often it is asked; they run oldest first, one at a time (live work read %s)',
    async (listing) => {
      const h = await harness({ start: '2026-03-06T12:00:00.000Z' });
      if (listing === 'newest first') reverseLiveWorkReads(h);
      const range = { automationId: 'daily', from: '2026-02-26T00:00:00Z', until: '2026-03-03T23:59:59Z' };
      const first = await h.ok(command(BACKFILL, range));
      expect(first.result).toMatchObject({ automationId: 'daily', alreadyPlanned: 0 });
      expect((first.result!.slots as string[]).map((s) => s.slice(5, 10))).toEqual([
        '02-26',
        '02-27',
        '02-28',
        '03-01',
        '03-02',
        '03-03',
      ]);
      expect(first.result!.planned).toHaveLength(6);
      // Asked again (a new request, not a replay): every slot already has its occurrence.
      const again = await h.ok(command(BACKFILL, { ...range, until: '2026-03-04T23:59:59Z' }));
      expect(again.result).toMatchObject({ planned: ['daily-1772614800000'], alreadyPlanned: 6 });

      const claimedOrder: string[] = [];
      for (let minute = 0; minute < 40; minute++) {
        h.clock.advance({ minutes: 1 });
        await h.engine.tick();
        const occurrences = await h.read.occurrences();
        const live = occurrences.filter((o) => LIVE.includes(o.state as string));
        expect(live.length, `live at ${h.clock.now().toISOString()}`).toBeLessThanOrEqual(1);
        for (const o of live)
          if (!claimedOrder.includes(String(o.scheduledFor))) claimedOrder.push(String(o.scheduledFor));
      }
      const occurrences = await h.read.occurrences();
      const backfilled = occurrences.filter((o) => String(o.scheduledFor) <= '2026-03-04T09:00:00.000Z');
      expect(backfilled).toHaveLength(7);
      for (const o of backfilled) {
        expect(o.state).toBe(OccurrenceState.succeeded);
        expect(validateAgainst('automation-occurrence.schema.json', o).problems).toEqual([]);
      }
      // Activated at 12:00, the schedule has no due slot of its own here: the backfill runs alone, oldest first.
      const fromBackfill = claimedOrder.filter((at) => at <= '2026-03-04T09:00:00.000Z');
      expect(fromBackfill).toEqual([...fromBackfill].sort());
      expect(fromBackfill).toHaveLength(7);
    },
  );

  test.each([
    [
      'a range ending in the future',
      { from: '2026-03-01T00:00:00Z', until: '2026-03-07T00:00:00Z' },
      'VALIDATION_FAILED',
    ],
    [
      'a range that ends before it starts',
      { from: '2026-03-03T00:00:00Z', until: '2026-03-01T00:00:00Z' },
      'VALIDATION_FAILED',
    ],
    [
      'a range reaching past the planning horizon',
      { from: '2026-02-01T00:00:00Z', until: '2026-02-25T00:00:00Z' },
      'VALIDATION_FAILED',
    ],
    [
      'an unknown field',
      { from: '2026-03-01T00:00:00Z', until: '2026-03-02T00:00:00Z', all: true },
      'VALIDATION_FAILED',
    ],
    ['a date that is not RFC 3339', { from: 'yesterday', until: '2026-03-02T00:00:00Z' }, 'VALIDATION_FAILED'],
  ])('refuses %s, writing nothing', async (_, range, code) => {
    const h = await harness({ start: '2026-03-06T12:00:00.000Z' });
    const response = await h.engine.commands.handle(command(BACKFILL, { automationId: 'daily', ...range }));
    expect(response.error?.code).toBe(code);
    expect(await h.read.occurrences()).toEqual([]);
  });

  test('refuses more than 500 slots, without expanding the whole range', async () => {
    const h = await harness({ start: '2026-03-06T12:00:00.000Z', schedule: { cron: '* * * * *', timezone: 'utc' } });
    const range = { automationId: 'daily', from: '2026-02-20T12:00:00Z', until: '2026-03-06T11:00:00Z' };
    const started = performance.now();
    const response = await h.engine.commands.handle(command(BACKFILL, range));
    expect(response.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { max: 500 } });
    // 20,000 minutes in the range; walking 501 of them is what a refusal may cost.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await h.read.occurrences()).toEqual([]);
  });

  test('under cancel-other, backfilled slots wait their turn and all run: none replaces another', async () => {
    const h = await harness({
      start: '2026-03-06T12:00:00.000Z',
      extensions: { 'x-coven-automata.overlap.v1': { policy: 'cancel-other' } },
    });
    const range = { automationId: 'daily', from: '2026-03-01T00:00:00Z', until: '2026-03-03T23:59:59Z' };
    await h.ok(command(BACKFILL, range));
    for (let minute = 0; minute < 30; minute++) {
      h.clock.advance({ minutes: 1 });
      await h.engine.tick();
    }
    const states = (await h.read.occurrences())
      .map((o) => `${String(o.scheduledFor).slice(5, 10)} ${String(o.state)}`)
      .sort();
    expect(states).toEqual(['03-01 succeeded', '03-02 succeeded', '03-03 succeeded']);
  });

  test('a due slot a backfill already took still records the older slots planning passed over', async () => {
    const h = await harness({ start: '2026-03-02T08:00:00.000Z' });
    h.clock.set('2026-03-04T12:00:00.000Z');
    // Active since 03-02 08:00 and never planned: 03-02, 03-03 and 03-04 09:00 are due; the backfill takes 03-04.
    await h.ok(
      command(BACKFILL, { automationId: 'daily', from: '2026-03-04T09:00:00Z', until: '2026-03-04T09:00:00Z' }),
    );
    await h.engine.tick();
    const misfire = (await h.read.feed()).find((e) => e.kind === 'occurrence.misfire_recorded');
    expect(misfire?.payload.collapsedSlots).toEqual(['2026-03-02T09:00:00.000Z', '2026-03-03T09:00:00.000Z']);
  });

  test('refuses a definition that is not active, or unknown', async () => {
    const h = await harness({ start: '2026-03-06T12:00:00.000Z', activate: false });
    const range = { from: '2026-03-01T00:00:00Z', until: '2026-03-02T00:00:00Z' };
    expect((await h.engine.commands.handle(command(BACKFILL, { automationId: 'daily', ...range }))).error?.code).toBe(
      'ILLEGAL_TRANSITION',
    );
    expect((await h.engine.commands.handle(command(BACKFILL, { automationId: 'nope', ...range }))).error?.code).toBe(
      'NOT_FOUND',
    );
  });
});
