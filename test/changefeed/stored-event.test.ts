import { describe, expect, test } from 'vitest';
import { appendEvent } from '../../src/changefeed/append-event.js';
import { Changefeed } from '../../src/changefeed/changefeed.js';
import {
  ensureStoreId,
  eventIdFor,
  type ChangefeedContext,
  type EventEnvelope,
  type NewEvent,
  type StreamRef,
} from '../../src/changefeed/event-envelope.js';
import { readEventFeed, readEventLog } from '../../src/changefeed/stored-event.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { MemoryStore } from '../../src/store/memory-store.js';

const NOW = '2026-03-01T08:00:00.000Z';
const STREAM = { kind: 'occurrence', id: 'occ-1' } as const;

/** The contract's member order, as the envelope was written whole before events were kept compactly. */
const ENVELOPE_ORDER = [
  'schemaVersion',
  'eventId',
  'stream',
  'sequence',
  'recordedAt',
  'observedAt',
  'producer',
  'causation',
  'automationId',
  'occurrenceId',
  'runId',
  'attemptId',
  'kind',
  'summary',
  'payload',
  'privacy',
];

const transition = (extra: Partial<NewEvent> = {}): NewEvent => ({
  stream: STREAM,
  kind: 'occurrence.transitioned',
  summary: 'occurrence occ-1 planned -> eligible',
  payload: { entity: 'occurrence', from: 'planned', to: 'eligible', reason: 'eligibility_passed' },
  automationId: 'nightly',
  occurrenceId: 'occ-1',
  adoptionKey: 'adoption-key-1',
  ...extra,
});

async function storeWith(events: Array<{ context?: Partial<ChangefeedContext>; event: NewEvent }>) {
  const store = new MemoryStore();
  const storeId = await store.transact((tx) => ensureStoreId(tx, () => 'store-1'));
  for (const { context, event } of events) {
    const feed: ChangefeedContext = {
      producer: { component: 'coven-automata', instanceId: 'engine-1' },
      storeId,
      now: NOW,
      ...context,
    };
    await store.transact((tx) => appendEvent(tx, feed, event));
  }
  return { store, storeId };
}

describe('events are kept compactly and read as the contract envelopes', () => {
  test("the store keeps what no entry's place, constant or transition says; reads rebuild the envelope member for member", async () => {
    const custom = transition({ summary: 'occurrence occ-1 made eligible by hand' });
    const { store, storeId } = await storeWith([{ event: transition() }, { event: custom }]);
    const raw = await store.read((r) => r.readLog<Record<string, unknown>>('occurrence/occ-1'));
    const compact = ['recordedAt', 'by', 'causation', 'automationId', 'kind', 'payload'];
    expect(Object.keys(raw[0]!.data)).toEqual(compact);
    expect(Object.keys(raw[1]!.data)).toEqual([...compact.slice(0, -1), 'summary', 'payload']);
    const [derived, envelope] = (await store.read((r) => readEventLog(r, STREAM))).map((e) => e.data);
    expect(derived!.summary).toBe('occurrence occ-1 planned -> eligible');
    expect(envelope).toEqual({
      schemaVersion: 'coven.automations.v1',
      eventId: eventIdFor(storeId, STREAM, 1),
      stream: STREAM,
      sequence: 1,
      recordedAt: NOW,
      observedAt: NOW,
      producer: { component: 'coven-automata', instanceId: 'engine-1' },
      causation: { adoptionKey: 'adoption-key-1' },
      automationId: 'nightly',
      occurrenceId: 'occ-1',
      kind: 'occurrence.transitioned',
      summary: 'occurrence occ-1 made eligible by hand',
      payload: { entity: 'occurrence', from: 'planned', to: 'eligible', reason: 'eligibility_passed' },
      privacy: { classification: 'operational', retention: { classification: 'standard' } },
    });
    for (const e of [derived!, envelope!]) {
      expect(Object.keys(e)).toEqual(ENVELOPE_ORDER.filter((key) => key in e));
      expect(validateAgainst('event-envelope.schema.json', e).problems).toEqual([]);
    }
    expect(JSON.stringify(raw[0]!.data).length).toBeLessThan(JSON.stringify(derived).length * 0.5);
  });

  test("an id a stream is named by is left out only when it is the stream's: others and none survive", async () => {
    const run = { kind: 'run', id: 'run-1' } as const;
    const attempt = {
      stream: run,
      kind: 'attempt.transitioned',
      summary: 'attempt att-1 launching -> running',
      payload: { entity: 'attempt', from: 'launching', to: 'running', reason: 'session_started' },
      occurrenceId: 'occ-1',
      runId: 'run-1',
      attemptId: 'att-1',
    } satisfies NewEvent;
    const events: NewEvent[] = [
      transition({ occurrenceId: undefined, summary: 'occurrence occ-1 planned -> eligible' }),
      transition({ occurrenceId: 'occ-other' }),
      attempt,
      { ...attempt, runId: undefined, summary: 'a run event naming no run' },
    ];
    const { store } = await storeWith(events.map((event) => ({ event })));
    const rawRun = await store.read((r) => r.readLog<Record<string, unknown>>('run/run-1'));
    expect(rawRun[0]!.data).not.toHaveProperty('runId');
    expect(rawRun[0]!.data).not.toHaveProperty('summary');
    expect(rawRun[1]!.data).toHaveProperty('runId', null);
    const read = async (stream: StreamRef) => (await store.read((r) => readEventLog(r, stream))).map((e) => e.data);
    const [none, other] = await read(STREAM);
    expect(none).not.toHaveProperty('occurrenceId');
    expect(none!.summary).toBe('occurrence occ-1 planned -> eligible');
    expect(other!.occurrenceId).toBe('occ-other');
    const [launched, unnamed] = await read(run);
    expect(launched).toMatchObject({ occurrenceId: 'occ-1', runId: 'run-1', attemptId: 'att-1' });
    expect(launched!.summary).toBe('attempt att-1 launching -> running');
    expect(unnamed).not.toHaveProperty('runId');
    expect(unnamed!.summary).toBe('a run event naming no run');
    for (const e of [none!, other!, launched!, unnamed!])
      expect(Object.keys(e)).toEqual(ENVELOPE_ORDER.filter((key) => key in e));
  });

  test('an observation instant of its own, another producer and a correlation id survive the round trip', async () => {
    const producer = { component: 'embedder', instanceId: 'host-7', implementationVersion: '2.1.0' };
    const { store } = await storeWith([
      {
        context: { producer },
        event: transition({ observedAt: '2026-03-01T07:59:00.000Z', correlationId: 'corr-9', runId: 'run-1' }),
      },
    ]);
    const [envelope] = (await store.read((r) => readEventFeed(r))).map((e) => e.data);
    expect(envelope).toMatchObject({
      recordedAt: NOW,
      observedAt: '2026-03-01T07:59:00.000Z',
      producer,
      causation: { adoptionKey: 'adoption-key-1', correlationId: 'corr-9' },
      runId: 'run-1',
    });
    expect(Object.keys(envelope!)).toEqual(ENVELOPE_ORDER.filter((key) => key in envelope!));
    expect(validateAgainst('event-envelope.schema.json', envelope).problems).toEqual([]);
  });

  test('entries an earlier version wrote as whole envelopes read as they are, beside compact ones', async () => {
    const { store, storeId } = await storeWith([]);
    const whole: EventEnvelope = {
      schemaVersion: 'coven.automations.v1',
      eventId: eventIdFor(storeId, STREAM, 0),
      stream: STREAM,
      sequence: 0,
      recordedAt: '2026-02-28T08:00:00.000Z',
      observedAt: '2026-02-28T07:00:00.000Z',
      producer: { component: 'coven-automata', instanceId: 'old-engine' },
      occurrenceId: 'occ-1',
      kind: 'occurrence.transitioned',
      summary: 'occurrence occ-1 none -> planned',
      payload: { entity: 'occurrence', from: 'none', to: 'planned', reason: 'slot_fenced' },
      privacy: { classification: 'operational', retention: { classification: 'standard' } },
    };
    await store.transact((tx) => tx.append('occurrence/occ-1', whole, 0));
    const feed: ChangefeedContext = { producer: { component: 'coven-automata', instanceId: 'e2' }, storeId, now: NOW };
    await store.transact((tx) => appendEvent(tx, feed, transition()));

    const page = await new Changefeed(store, new SimulatedClock(NOW)).read(STREAM);
    expect(page.events[0]).toEqual(whole);
    expect(page.events.map((e) => [e.sequence, e.producer.instanceId])).toEqual([
      [0, 'old-engine'],
      [1, 'e2'],
    ]);
    expect(new Set(page.events.map((e) => e.eventId)).size).toBe(2);
    for (const e of page.events) expect(validateAgainst('event-envelope.schema.json', e).problems).toEqual([]);
  });
});
