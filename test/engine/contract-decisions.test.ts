import { afterEach, describe, expect, it } from 'vitest';
import { CANCELLATION_STOP_LEASE_MS, stopOwnedByCancellation } from '../../src/guards/stop-ownership.js';
import { World } from '../../src/testkit/invariants/world.js';

// The deadline-instant decision of docs/conformance.md: a cancellation committed at the instant
// the run's deadline passes. On the engine, every invariant checked.

const at = (w: World, time: string) => w.clock.set(`2026-03-02T${time}.000Z`);

interface Seen {
  state: string;
  attributes: Record<string, unknown>;
}

async function occurrences(w: World): Promise<Seen[]> {
  const records = await w.store.read((r) => r.list('occurrence'));
  return records.map((o) => {
    const data = o.data as { snapshot: { value: string }; attributes: Record<string, unknown> };
    return { state: data.snapshot.value, attributes: data.attributes };
  });
}

let world: World | undefined;
afterEach(async () => {
  await world?.dispose();
  world = undefined;
});

describe("a cancellation committed at the instant the run's deadline passes", () => {
  async function runningPastStart(): Promise<{ w: World; occurrenceId: string; deadlineAt: string }> {
    const w = (world = await World.create('memory', {}, new Map(), false));
    await w.define('alpha', 1, [9]);
    w.behave('hang');
    at(w, '09:00:00');
    await w.tick();
    at(w, '09:01:00');
    await w.tick();
    await w.verify('running');
    const records = await w.store.read((r) => r.list('occurrence'));
    const record = records[0]!;
    const context = (record.data as { snapshot: { context: { deadlineAt: string } } }).snapshot.context;
    expect((await occurrences(w)).map((o) => o.state)).toEqual(['running']);
    return { w, occurrenceId: record.id, deadlineAt: context.deadlineAt };
  }

  it('the committed cancel wins: the occurrence settles cancelled, not timed_out', async () => {
    const { w, occurrenceId, deadlineAt } = await runningPastStart();
    w.clock.set(deadlineAt);
    await w.command('occurrence.cancel.v1', { occurrenceId });
    await w.tick();
    w.clock.advance({ seconds: 5 });
    await w.tick();
    await w.verify('cancel at the deadline instant, then passes');
    expect((await occurrences(w)).map((o) => o.state)).toEqual(['cancelled']);
  });

  it('a cancel committed after the deadline finds the run timed out', async () => {
    const { w, occurrenceId, deadlineAt } = await runningPastStart();
    w.clock.set(new Date(Date.parse(deadlineAt) + 1000).toISOString());
    await w.command('occurrence.cancel.v1', { occurrenceId });
    await w.tick();
    await w.verify('cancel a second after the deadline');
    expect((await occurrences(w)).map((o) => o.state)).toEqual(['timed_out']);
  });
});

describe('stopOwnedByCancellation (the guard fact behind the deadline-instant decision)', () => {
  const deadline = '2026-03-02T09:45:00.000Z';
  const plus = (ms: number) => new Date(Date.parse(deadline) + ms).toISOString();
  it('owns the stop when requested at or before the deadline, for the stop lease only', () => {
    expect(stopOwnedByCancellation(deadline, deadline, deadline)).toBe(true);
    expect(stopOwnedByCancellation(deadline, plus(-10_000), deadline)).toBe(true);
    expect(stopOwnedByCancellation(deadline, plus(-60_000), deadline)).toBe(false);
    expect(stopOwnedByCancellation(deadline, deadline, plus(CANCELLATION_STOP_LEASE_MS - 1))).toBe(true);
    expect(stopOwnedByCancellation(deadline, deadline, plus(CANCELLATION_STOP_LEASE_MS))).toBe(false);
  });
  it('never for a request after the deadline, or with no request or no deadline', () => {
    expect(stopOwnedByCancellation(deadline, plus(1), plus(1))).toBe(false);
    expect(stopOwnedByCancellation(deadline, undefined, deadline)).toBe(false);
    expect(stopOwnedByCancellation(null, deadline, deadline)).toBe(false);
  });
});
