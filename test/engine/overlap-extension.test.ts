import { describe, expect, test } from 'vitest';
import { OccurrenceState } from '../../machines/index.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { OVERLAP_EXTENSION, type OverlapExtension } from '../../src/schedule/overlap-extension.js';
import { SCHEDULE_EXTENSION } from '../../src/schedule/schedule-extension.js';
import { command, definitionBody } from '../support/commands.js';
import { harness, scheduledBy } from '../support/engine-harness.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { captureHistory } from '../../src/testkit/invariants/history.js';
import { OVERLAP_CHECK } from '../../src/testkit/invariants/conformance-checks.js';

const QUARTER_HOURS = { cron: '*/15 * * * *', timezone: 'utc' };

/** An engine whose `daily` runs every quarter hour under `overlap`, its sessions lasting `runMinutes`. */
async function quarterHourly(
  start: string,
  overlap: OverlapExtension | undefined,
  runMinutes = 1,
  store: Store = new MemoryStore(),
) {
  const h = await harness({
    start,
    store,
    schedule: QUARTER_HOURS,
    perRunMinutes: 60,
    runtime: new SimulatedRuntime({ durationMs: runMinutes * 60_000 }),
    ...(overlap === undefined ? {} : { extensions: { [OVERLAP_EXTENSION]: overlap } }),
  });
  /**
   * Moves the clock minute by minute to `until`, one pass a minute, checking `maxLive` live occurrences at most
   * (one, the contract's rule, unless told); answers the most seen at once.
   */
  const runUntil = async (until: string, maxLive = 1) => {
    let most = 0;
    while (h.clock.now().getTime() < Date.parse(until)) {
      h.clock.advance({ minutes: 1 });
      await h.engine.tick();
      const live = (await h.read.occurrences()).filter((o) =>
        ['claimed', 'dispatching', 'running'].includes(o.state as string),
      );
      expect(live.length, `live at ${h.clock.now().toISOString()}`).toBeLessThanOrEqual(maxLive);
      most = Math.max(most, live.length);
    }
    return most;
  };
  const ran = async () =>
    (await h.read.occurrences())
      .filter((o) => o.state === OccurrenceState.succeeded)
      .map((o) => String(o.scheduledFor).slice(11, 16))
      .sort();
  const skipped = async () =>
    (await h.read.occurrences())
      .filter((o) => o.misfireDisposition === 'skipped_overlap')
      .map((o) => String(o.scheduledFor).slice(11, 16))
      .sort();
  const recorded = async () =>
    (await h.read.feed())
      .filter((e) => e.kind === 'occurrence.misfire_recorded')
      .flatMap((e) => (e.payload.collapsedSlots as string[]).map((s) => s.slice(11, 16)));
  return { h, runUntil, ran, skipped, recorded };
}

describe('x-coven-automata.overlap.v1', () => {
  test('forbid (the contract): slots due while a 40-minute run is live are planned and skipped', async () => {
    const w = await quarterHourly('2026-12-07T08:59:00.000Z', { policy: 'forbid' }, 40);
    await w.runUntil('2026-12-07T10:30:00.000Z');
    // 09:00 runs to 09:40, 09:45 to 10:25; 10:30 finds the automation free again.
    expect(await w.ran()).toEqual(['09:00', '09:45']);
    expect(await w.skipped()).toEqual(['09:15', '09:30', '10:00', '10:15']);
  });

  test('buffer-one: they wait unplanned, and the latest runs as soon as the live run ends; none is skipped', async () => {
    const w = await quarterHourly('2026-12-07T08:59:00.000Z', { policy: 'buffer-one' }, 40);
    await w.runUntil('2026-12-07T10:30:00.000Z');
    // 09:00 runs to 09:40; the next pass plans 09:30 (09:15 collapsed into it), which runs to 10:21; then 10:15
    // (09:45 and 10:00 collapsed).
    expect(await w.ran()).toEqual(['09:00', '09:30']);
    const live = (await w.h.read.occurrences()).find((o) => o.state === OccurrenceState.running);
    expect(live?.scheduledFor).toBe('2026-12-07T10:15:00.000Z');
    expect(await w.skipped()).toEqual([]);
    expect(await w.recorded()).toEqual(['09:15', '09:45', '10:00']);
  });

  test('cancel-other: a slot due while a run is live asks it to cancel (a request the runtime acknowledges), then runs', async () => {
    const w = await quarterHourly('2026-12-07T08:59:00.000Z', { policy: 'cancel-other' }, 40);
    await w.runUntil('2026-12-07T10:05:00.000Z');
    const occurrences = (await w.h.read.occurrences()).sort((a, b) =>
      String(a.scheduledFor).localeCompare(String(b.scheduledFor)),
    );
    expect(occurrences.map((o) => [String(o.scheduledFor).slice(11, 16), o.state])).toEqual([
      ['09:00', 'cancelled'],
      ['09:15', 'cancelled'],
      ['09:30', 'cancelled'],
      ['09:45', 'cancelled'],
      ['10:00', 'running'],
    ]);
    for (const o of occurrences.slice(0, 4)) {
      expect(o.cancellation).toMatchObject({ requestedBy: { principalId: 'coven-automata:scheduler' } });
      expect(validateAgainst('automation-occurrence.schema.json', o).problems).toEqual([]);
    }
    expect(await w.skipped()).toEqual([]);
  });

  test('allow: slots due while runs are live run beside them, nothing skipped, and run-now is not refused', async () => {
    const w = await quarterHourly('2026-12-07T08:59:00.000Z', { policy: 'allow' }, 40);
    // 09:00 runs to 09:40, 09:15 to 09:55, 09:30 to 10:10: three at once from 09:30.
    expect(await w.runUntil('2026-12-07T09:35:00.000Z', 3)).toBe(3);
    const manual = await w.h.engine.commands.handle(command('occurrence.runNow.v1', { automationId: 'daily' }));
    expect(manual.outcome, JSON.stringify(manual.error)).toBe('committed');
    expect(await w.runUntil('2026-12-07T10:20:00.000Z', 4)).toBe(4);
    // 09:45 runs to 10:25.
    expect(await w.ran()).toEqual(['09:00', '09:15', '09:30', '09:35']);
    expect(await w.skipped()).toEqual([]);
    // The invariant suite's one-live-run check leaves occurrences that allow overlap out, and only those.
    const empty = { launches: [], cancels: [], exits: new Map(), lost: new Set<string>() };
    const history = await captureHistory(w.h.store, empty, w.h.clock.now().toISOString(), []);
    expect(OVERLAP_CHECK.check(history, undefined)).toEqual([]);
    for (const record of history.records.occurrence.values())
      expect((record.data.attributes as { overlap?: string }).overlap).toBe('allow');
  });

  test('catch-up oldest-first: after an outage, slots within the window run one by one, older ones recorded', async () => {
    // Active from 08:00; the engine's first pass is at 10:05. The window reaches back to 09:05.
    const w = await quarterHourly('2026-12-07T08:00:00.000Z', {
      policy: 'forbid',
      catchUp: { windowMinutes: 60, order: 'oldest-first' },
    });
    w.h.clock.set('2026-12-07T10:04:00.000Z');
    await w.runUntil('2026-12-07T10:20:00.000Z');
    expect(await w.ran()).toEqual(['09:15', '09:30', '09:45', '10:00', '10:15']);
    expect(await w.recorded()).toEqual(['08:00', '08:15', '08:30', '08:45', '09:00']);
    const planned = (await w.h.read.feed())
      .filter((e) => e.kind === 'occurrence.transitioned' && e.payload.to === 'claimed')
      .map((e) => String(e.occurrenceId));
    const order = (await w.h.read.occurrences()).sort(
      (a, b) => planned.indexOf(String(a.occurrenceId)) - planned.indexOf(String(b.occurrenceId)),
    );
    expect(order.map((o) => String(o.scheduledFor).slice(11, 16))).toEqual([
      '09:15',
      '09:30',
      '09:45',
      '10:00',
      '10:15',
    ]);
  });

  test('catch-up latest-only: the latest slot within the window runs, the rest are recorded', async () => {
    const w = await quarterHourly('2026-12-07T08:00:00.000Z', {
      policy: 'forbid',
      catchUp: { windowMinutes: 60, order: 'latest-only' },
    });
    w.h.clock.set('2026-12-07T10:04:00.000Z');
    await w.runUntil('2026-12-07T10:07:00.000Z');
    expect(await w.ran()).toEqual(['10:00']);
    expect(await w.recorded()).toEqual(['08:00', '08:15', '08:30', '08:45', '09:00', '09:15', '09:30', '09:45']);
  });

  test('catch-up: when every missed slot is beyond the window nothing runs, and the automation stream says so', async () => {
    const h = await harness({
      start: '2026-12-07T08:00:00.000Z',
      schedule: { cron: '0 9 * * *', timezone: 'utc' },
      extensions: { [OVERLAP_EXTENSION]: { policy: 'forbid', catchUp: { windowMinutes: 30, order: 'oldest-first' } } },
    });
    h.clock.set('2026-12-07T09:45:00.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
    expect(await h.read.occurrences()).toEqual([]);
    const [misfire] = await h.read.stream('automation', 'daily');
    const recorded = (await h.read.feed()).find((e) => e.kind === 'occurrence.misfire_recorded')!;
    expect(recorded).toMatchObject({
      stream: { kind: 'automation', id: 'daily' },
      payload: { collapsedSlots: ['2026-12-07T09:00:00.000Z'] },
    });
    expect(misfire).toBeDefined();
    expect(validateAgainst('event-envelope.schema.json', recorded).problems).toEqual([]);
    h.clock.set('2026-12-07T10:00:00.000Z');
    expect((await h.engine.tick()).planned).toBe(0);
  });

  test('is advertised and validated by its schema; every policy is accepted', async () => {
    const h = await harness({ activate: false });
    const create = async (id: string, overlap: unknown) => {
      const extra = { ...scheduledBy(QUARTER_HOURS) };
      extra.extensions = { ...extra.extensions!, [OVERLAP_EXTENSION]: overlap } as never;
      const response = await h.engine.commands.handle(
        command('definition.create.v1', { definition: definitionBody(id, { extra }) }),
      );
      return response.outcome === 'rejected'
        ? `${response.error!.code} ${String((response.error!.details as { variant?: string })?.variant ?? '')}`.trim()
        : 'accepted';
    };
    expect(await create('buffered', { policy: 'buffer-one' })).toBe('accepted');
    expect(await create('catching', { policy: 'forbid', catchUp: { windowMinutes: 60, order: 'oldest-first' } })).toBe(
      'accepted',
    );
    expect(await create('side-by-side', { policy: 'allow' })).toBe('accepted');
    expect(await create('cancelling', { policy: 'cancel-other' })).toBe('accepted');
    expect(await create('unknown-policy', { policy: 'replace' })).toBe('VALIDATION_FAILED');
    expect(
      await create('cancel-and-catch-up', {
        policy: 'cancel-other',
        catchUp: { windowMinutes: 60, order: 'oldest-first' },
      }),
    ).toBe('CAPABILITY_UNSUPPORTED overlap.cancel-other.catchUp');
    expect(
      await create('huge-window', { policy: 'forbid', catchUp: { windowMinutes: 99_999, order: 'oldest-first' } }),
    ).toBe('VALIDATION_FAILED');
    expect(SCHEDULE_EXTENSION).not.toBe(OVERLAP_EXTENSION);
  });
});
