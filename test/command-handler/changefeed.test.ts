import { describe, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';
import { readEventLog } from '../../src/changefeed/stored-event.js';
import { StreamReducer } from '../../src/changefeed/reducer.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { command, definitionBody, expectCommitted, expectRejected } from '../support/commands.js';
import { legacyFlatDefinition } from '../../src/testkit/conformance/legacy-flat.js';

async function seeded() {
  const store = new MemoryStore();
  const clock = new SimulatedClock('2026-03-01T08:00:00.000Z');
  const handler = new CommandHandler({ store, clock, newId: () => 'teststore' });
  for (const id of ['a', 'b']) {
    expectCommitted(await handler.handle(command('definition.create.v1', { definition: definitionBody(id) })));
    clock.advance({ minutes: 1 });
    expectCommitted(
      await handler.handle(
        command(
          'definition.revise.v1',
          { definition: definitionBody(id, { revision: 2, lifecycleState: 'paused' }) },
          { expectedRevision: 1 },
        ),
      ),
    );
    clock.advance({ minutes: 1 });
  }
  return { store, clock, handler };
}

const read = (handler: CommandHandler, payload: Record<string, unknown>) =>
  handler.handle(command('events.read.v1', payload));

describe('changefeed', () => {
  test('events.read pages a stream with cursors; every event validates and ids are unique', async () => {
    const { handler } = await seeded();
    const first = expectCommitted(await read(handler, { stream: { kind: 'automation', id: 'a' }, limit: 1 }));
    expect(first.result).toMatchObject({ after: null, nextAfter: 0 });
    const rest = expectCommitted(await read(handler, { stream: { kind: 'automation', id: 'a' }, after: 0 }));
    const events = rest.result!.events as EventEnvelope[];
    expect(events.map((e) => [e.sequence, e.kind])).toEqual([[1, 'definition.revised']]);
    const feed = expectCommitted(await read(handler, { stream: { kind: 'feed', id: 'all' } }));
    const all = feed.result!.events as EventEnvelope[];
    expect(all.map((e) => `${e.stream.id}:${e.sequence}`)).toEqual(['a:0', 'a:1', 'b:0', 'b:1']);
    expect(new Set(all.map((e) => e.eventId)).size).toBe(4);
    for (const e of all) expect(validateAgainst('event-envelope.schema.json', e).problems).toEqual([]);
    expect(feed.result!.nextAfter).toBe(3);
  });

  test('from resolves an instant to a cursor; after and from together are refused', async () => {
    const { handler } = await seeded();
    const page = expectCommitted(
      await read(handler, { stream: { kind: 'feed', id: 'all' }, from: '2026-03-01T08:02:00.000Z' }),
    );
    expect((page.result!.events as EventEnvelope[]).map((e) => e.recordedAt)).toEqual([
      '2026-03-01T08:02:00.000Z',
      '2026-03-01T08:03:00.000Z',
    ]);
    expectRejected(
      await read(handler, { stream: { kind: 'feed', id: 'all' }, after: 1, from: '2026-03-01T08:02:00.000Z' }),
      'VALIDATION_FAILED',
    );
  });

  test('a checkpoint resumes its own stream, is refused on another, and expires with CURSOR_EXPIRED', async () => {
    const { handler, clock } = await seeded();
    const page = expectCommitted(await read(handler, { stream: { kind: 'automation', id: 'a' }, limit: 1 }));
    const checkpoint = page.result!.checkpoint as string;
    const resumed = expectCommitted(
      await handler.handle(command('events.subscribe.v1', { stream: { kind: 'automation', id: 'a' }, checkpoint })),
    );
    expect((resumed.result!.events as EventEnvelope[]).map((e) => e.sequence)).toEqual([1]);
    expectRejected(
      await handler.handle(command('events.subscribe.v1', { stream: { kind: 'automation', id: 'b' }, checkpoint })),
      'VALIDATION_FAILED',
    );
    expectRejected(
      await handler.handle(
        command('events.subscribe.v1', { stream: { kind: 'automation', id: 'a' }, checkpoint: `${checkpoint}x` }),
      ),
      'VALIDATION_FAILED',
    );
    clock.advance({ hours: 24 });
    const expired = expectRejected(
      await handler.handle(command('events.subscribe.v1', { stream: { kind: 'automation', id: 'a' }, checkpoint })),
      'CURSOR_EXPIRED',
      410,
    );
    expect(expired.error?.details).toHaveProperty('expiredAt');
  });

  test('subscribe delivers the backlog, then live events as they commit', async () => {
    const { handler } = await seeded();
    const controller = new AbortController();
    const received: string[] = [];
    const consumer = (async () => {
      for await (const event of handler.subscribe(
        { kind: 'feed', id: 'all' },
        { after: 2, signal: controller.signal },
      )) {
        received.push(`${event.stream.id}:${event.kind}`);
        if (received.length === 3) controller.abort();
      }
    })();
    await handler.handle(command('definition.create.v1', { definition: definitionBody('c') }));
    await handler.handle(command('definition.activate.v1', { automationId: 'a' }, { expectedRevision: 2 }));
    await consumer;
    expect(received).toEqual(['b:definition.revised', 'c:definition.created', 'a:definition.activated']);
  });

  test('the reducer ignores redeliveries and refuses regressions', async () => {
    const { handler } = await seeded();
    const events = expectCommitted(await read(handler, { stream: { kind: 'automation', id: 'a' } })).result!
      .events as EventEnvelope[];
    const reducer = new StreamReducer({ kind: 'automation', id: 'a' }, (s: string[], e) => [...s, e.kind], []);
    expect(reducer.apply(events[0]!)).toBe(true);
    expect(reducer.apply(events[0]!)).toBe(false);
    expect(reducer.apply(events[1]!)).toBe(true);
    expect(reducer.state).toEqual(['definition.created', 'definition.revised']);
    const fresh = new StreamReducer({ kind: 'automation', id: 'a' }, (s: string[], e) => [...s, e.kind], []);
    expect(() => fresh.apply(events[1]!)).toThrow(expect.objectContaining({ code: 'STREAM_OUT_OF_ORDER' }));
  });
});

describe('legacy import', () => {
  const flat = (id: string, extra: Record<string, unknown> = {}) => ({
    ...legacyFlatDefinition({ id, name: `Legacy ${id}`, status: 'ACTIVE', prompt: 'Run it.' }),
    ...extra,
  });

  test('imports into draft with one definition.imported event each, skips existing ids, reports failures', async () => {
    const { handler, store } = await seeded();
    const r = expectCommitted(
      await handler.handle(
        command('legacy.import.v1', {
          source: 'flat-definitions',
          definitions: [
            flat('l1'),
            flat('a'),
            flat('l2', { familiarId: 'charm', cwd: 'work' }),
            flat('bad', { rrule: 'FREQ=HOURLY' }),
            flat('odd', { colour: 'red' }),
            flat('l1'),
          ],
        }),
      ),
    );
    expect(r.result).toMatchObject({ source: 'flat-definitions', dryRun: false, imported: ['l1', 'l2'] });
    expect((r.result!.skipped as Array<{ automationId: string }>).map((s) => s.automationId)).toEqual(['a', 'l1']);
    expect(
      (r.result!.failures as Array<{ automationId: string; code: string }>).map((f) => [f.automationId, f.code]),
    ).toEqual([
      ['bad', 'CAPABILITY_UNSUPPORTED'],
      ['odd', 'VALIDATION_FAILED'],
    ]);
    const got = expectCommitted(await handler.handle(command('definition.get.v1', { automationId: 'l2' })));
    expect(got.result).toMatchObject({
      lifecycleState: 'draft',
      definition: { provenance: { importedFrom: 'legacy:l2' }, extensions: { 'x-legacy-status': 'ACTIVE' } },
    });
    const events = await store.read((reader) => readEventLog(reader, { kind: 'automation', id: 'l2' }));
    expect(events.map((e) => e.data.kind)).toEqual(['definition.imported']);
  });

  test('a dry run reports the same verdict and writes nothing, its key included', async () => {
    const { handler, store } = await seeded();
    const feed = await store.read((r) => r.readFeed());
    const dry = expectCommitted(
      await handler.handle(
        command(
          'legacy.import.v1',
          { source: 'flat-definitions', definitions: [flat('l1')], dryRun: true },
          { adoptionKey: 'key-import-0001' },
        ),
      ),
    );
    expect(dry.result).toMatchObject({ dryRun: true, imported: ['l1'] });
    expect(await store.read((r) => r.readFeed())).toEqual(feed);
    expectRejected(await handler.handle(command('definition.get.v1', { automationId: 'l1' })), 'NOT_FOUND');
    const real = expectCommitted(
      await handler.handle(
        command(
          'legacy.import.v1',
          { source: 'flat-definitions', definitions: [flat('l1')] },
          { adoptionKey: 'key-import-0001' },
        ),
      ),
    );
    expect(real.result).toMatchObject({ dryRun: false, imported: ['l1'] });
  });
});
