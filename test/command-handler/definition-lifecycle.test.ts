import { describe, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { defaultRequirements } from '../../src/command-handler/context.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { readEventLog } from '../../src/changefeed/stored-event.js';
import { command, definitionBody, expectCommitted, expectRejected, expectValidResponse } from '../support/commands.js';

function setup(options: { knownRuntimes?: string[] } = {}) {
  const store = new MemoryStore();
  const clock = new SimulatedClock('2026-03-01T08:00:00.000Z');
  let n = 0;
  const handler = new CommandHandler({
    store,
    clock,
    newId: () => `store${++n}`,
    ...(options.knownRuntimes === undefined ? {} : { requirements: defaultRequirements(options.knownRuntimes) }),
  });
  return { store, clock, handler };
}

async function createAndRevise(handler: CommandHandler, id: string) {
  expectCommitted(await handler.handle(command('definition.create.v1', { definition: definitionBody(id) })));
  expectCommitted(
    await handler.handle(
      command(
        'definition.revise.v1',
        { definition: definitionBody(id, { revision: 2, lifecycleState: 'paused' }) },
        { expectedRevision: 1 },
      ),
    ),
  );
}

describe('definition lifecycle through the command handler', () => {
  test('create commits revision 1 in draft with one event, and the stored objects validate', async () => {
    const { handler, store } = setup();
    const response = expectCommitted(
      await handler.handle(command('definition.create.v1', { definition: definitionBody('nightly') })),
    );
    expect(response.revision).toBe(1);
    expect(response.eventRef).toEqual({ stream: 'automation/nightly', sequence: 0 });
    expect(response.result).toMatchObject({ automationId: 'nightly', revision: 1, lifecycleState: 'draft' });
    const events = await store.read((r) => readEventLog(r, { kind: 'automation', id: 'nightly' }));
    expect(events.map((e) => e.data.kind)).toEqual(['definition.created']);
    expect(validateAgainst('event-envelope.schema.json', events[0]!.data).problems).toEqual([]);
    expect(events[0]!.data.causation?.adoptionKey).toBeDefined();
    const stored = await store.read((r) => r.get<{ attributes: { definition: unknown } }>('definition', 'nightly'));
    expect(validateAgainst('automation-definition.schema.json', stored!.data.attributes.definition).problems).toEqual(
      [],
    );
    expect((stored!.data.attributes.definition as { extensions: unknown }).extensions).toEqual({
      'x-test': { kept: true },
    });
  });

  test("the stored body's lifecycleState is the committed machine state at every step (tombstoned keeps the last one)", async () => {
    const { handler, store } = setup();
    const stored = () =>
      store.read((r) =>
        r.get<{ snapshot: { value: string }; attributes: { definition: { lifecycleState: string } } }>(
          'definition',
          'nightly',
        ),
      );
    const pairs: Array<[string, string]> = [];
    const record = async () => {
      const r = (await stored())!;
      pairs.push([r.data.snapshot.value, r.data.attributes.definition.lifecycleState]);
    };
    await createAndRevise(handler, 'nightly');
    await record();
    const lifecycle = ['definition.activate.v1', 'definition.pause.v1', 'definition.disable.v1'];
    lifecycle.push('x-coven-automata.definition.reenable.v1', 'definition.tombstone.v1');
    for (const [i, name] of lifecycle.entries()) {
      expectCommitted(
        await handler.handle(command(name, { automationId: 'nightly', reason: 'test' }, { expectedRevision: i + 2 })),
      );
      await record();
    }
    expect(pairs).toEqual([
      ['paused', 'paused'],
      ['active', 'active'],
      ['paused', 'paused'],
      ['disabled', 'disabled'],
      ['paused', 'paused'],
      ['tombstoned', 'paused'],
    ]);
  });

  test('walks draft → paused → active → paused → active → disabled → (re-enable) paused → tombstoned, one revision per command', async () => {
    const { handler, store } = setup();
    await createAndRevise(handler, 'nightly');
    const steps: Array<[string, string, number]> = [
      ['definition.activate.v1', 'active', 3],
      ['definition.pause.v1', 'paused', 4],
      ['definition.activate.v1', 'active', 5],
      ['definition.disable.v1', 'disabled', 6],
    ];
    for (const [name, state, revision] of steps) {
      const r = expectCommitted(
        await handler.handle(
          command(name, { automationId: 'nightly', reason: 'test' }, { expectedRevision: revision - 1 }),
        ),
      );
      expect(r.result).toMatchObject({ lifecycleState: state, revision });
    }
    // The contract has no v1 command from disabled; activate stays illegal, as upstream's vectors require.
    expectRejected(
      await handler.handle(command('definition.activate.v1', { automationId: 'nightly' }, { expectedRevision: 6 })),
      'ILLEGAL_TRANSITION',
      422,
    );
    const reenabled = expectCommitted(
      await handler.handle(
        command('x-coven-automata.definition.reenable.v1', { automationId: 'nightly' }, { expectedRevision: 6 }),
      ),
    );
    expect(reenabled.result).toMatchObject({ lifecycleState: 'paused', revision: 7 });
    const gone = expectCommitted(
      await handler.handle(
        command('definition.tombstone.v1', { automationId: 'nightly', reason: 'retired' }, { expectedRevision: 7 }),
      ),
    );
    expect(gone.result).toMatchObject({ lifecycleState: 'tombstoned', revision: 8, tombstoned: true });

    const kinds = (await store.read((r) => readEventLog(r, { kind: 'automation', id: 'nightly' }))).map(
      (e) => `${e.sequence}:${e.data.kind}:${String(e.data.payload.lifecycleState)}`,
    );
    expect(kinds).toEqual([
      '0:definition.created:draft',
      '1:definition.revised:paused',
      '2:definition.activated:active',
      '3:definition.paused:paused',
      '4:definition.activated:active',
      '5:definition.disabled:disabled',
      '6:definition.paused:paused',
      '7:definition.tombstoned:tombstoned',
    ]);
    // Tombstoned: history readable, every later mutation GONE_TOMBSTONED.
    const got = expectCommitted(await handler.handle(command('definition.get.v1', { automationId: 'nightly' })));
    expect(got.result).toMatchObject({ lifecycleState: 'tombstoned', revision: 8 });
    expect((got.result!.definition as { deletion: unknown }).deletion).toMatchObject({
      tombstoned: true,
      reason: 'retired',
    });
    const historic = expectCommitted(
      await handler.handle(command('definition.get.v1', { automationId: 'nightly', revision: 2 })),
    );
    expect(historic.result).toMatchObject({
      revision: 2,
      currentRevision: 8,
      definition: { revision: 2, lifecycleState: 'paused' },
    });
    expectRejected(
      await handler.handle(command('definition.pause.v1', { automationId: 'nightly' }, { expectedRevision: 8 })),
      'GONE_TOMBSTONED',
      410,
    );
    expectRejected(
      await handler.handle(command('definition.create.v1', { definition: definitionBody('nightly') })),
      'GONE_TOMBSTONED',
      410,
    );
  });

  test('checks in the contract order: NOT_FOUND, GONE_TOMBSTONED, REVISION_CONFLICT, ILLEGAL_TRANSITION', async () => {
    const { handler } = setup();
    expectRejected(
      await handler.handle(command('definition.pause.v1', { automationId: 'missing' }, { expectedRevision: 1 })),
      'NOT_FOUND',
      404,
    );
    await createAndRevise(handler, 'a');
    const conflict = expectRejected(
      await handler.handle(command('definition.pause.v1', { automationId: 'a' }, { expectedRevision: 1 })),
      'REVISION_CONFLICT',
      409,
    );
    expect(conflict.error?.currentRevision).toBe(2);
    expect(conflict.error?.details).toMatchObject({ currentRevision: 2 });
    // paused → paused is no transition: the machine refuses it once the revision matches.
    expectRejected(
      await handler.handle(command('definition.pause.v1', { automationId: 'a' }, { expectedRevision: 2 })),
      'ILLEGAL_TRANSITION',
      422,
    );
    expectCommitted(
      await handler.handle(command('definition.tombstone.v1', { automationId: 'a' }, { expectedRevision: 2 })),
    );
    // Tombstoned wins over a stale revision.
    expectRejected(
      await handler.handle(command('definition.activate.v1', { automationId: 'a' }, { expectedRevision: 1 })),
      'GONE_TOMBSTONED',
    );
  });

  test('create refuses what the contract or this engine does not allow, with the right code', async () => {
    const { handler } = setup();
    const cases: Array<[string, unknown, string]> = [
      ['a non-draft body', definitionBody('x1', { lifecycleState: 'paused' }), 'ILLEGAL_TRANSITION'],
      ['revision 2', definitionBody('x2', { revision: 2 }), 'VALIDATION_FAILED'],
      [
        'a stale integrity digest',
        { ...definitionBody('x3'), display: { name: 'changed after hashing' } },
        'VALIDATION_FAILED',
      ],
      [
        'a home-relative delivery target',
        definitionBody('x4', {
          extra: {
            policies: { ...definitionBody('x').policies, delivery: { outputTarget: '~/out.md', mode: 'atomic' } },
          },
        }),
        'CAPABILITY_UNSUPPORTED',
      ],
      ['an hourly rule', definitionBody('x5', { rrule: 'FREQ=HOURLY' }), 'CAPABILITY_UNSUPPORTED'],
      ['a malformed rule', definitionBody('x6', { rrule: 'FREQ=DAILY;;BYHOUR=9' }), 'VALIDATION_FAILED'],
      ['a local timezone', definitionBody('x7', { timezone: 'local' }), 'CAPABILITY_UNSUPPORTED'],
      ['an unknown timezone', definitionBody('x8', { timezone: 'Mars/Olympus_Mons' }), 'VALIDATION_FAILED'],
      ['an unknown field', { ...definitionBody('x9'), autoRetry: true }, 'VALIDATION_FAILED'],
      [
        'a condition variant',
        definitionBody('x10', { extra: { conditions: [{ variant: 'webhook' }] } }),
        'CAPABILITY_UNSUPPORTED',
      ],
      [
        'a webhook trigger',
        { ...definitionBody('x11'), trigger: { variant: 'webhook', version: 1, webhook: {} } },
        'CAPABILITY_UNSUPPORTED',
      ],
      [
        'a backfill misfire policy',
        definitionBody('x12', {
          extra: { policies: { ...definitionBody('x').policies, misfire: { disposition: 'backfill' } } },
        }),
        'CAPABILITY_UNSUPPORTED',
      ],
      [
        'a future schema version',
        { ...definitionBody('x13'), schemaVersion: 'coven.automations.v2' },
        'SCHEMA_VERSION_UNSUPPORTED',
      ],
    ];
    for (const [why, body, code] of cases) {
      const r = await handler.handle(command('definition.create.v1', { definition: body }));
      expect(r.outcome, why).toBe('rejected');
      expect(r.error?.code, `${why}: ${r.error?.message}`).toBe(code);
      expectValidResponse(r);
    }
    const delivery = await handler.handle(command('definition.create.v1', { definition: cases[3]![1] }));
    expect(delivery.error?.details).toMatchObject({ variant: 'outputTarget.home-relative' });
    expectCommitted(await handler.handle(command('definition.create.v1', { definition: definitionBody('dup') })));
    expectRejected(
      await handler.handle(command('definition.create.v1', { definition: definitionBody('dup') })),
      'REVISION_CONFLICT',
    );
  });

  test('revise keeps an active definition active, and invalidates it when its runtime is unknown', async () => {
    const { handler, store } = setup({ knownRuntimes: ['coven-code'] });
    await createAndRevise(handler, 'r');
    expectCommitted(
      await handler.handle(command('definition.activate.v1', { automationId: 'r' }, { expectedRevision: 2 })),
    );
    const kept = expectCommitted(
      await handler.handle(
        command(
          'definition.revise.v1',
          { definition: definitionBody('r', { revision: 4, lifecycleState: 'active', rrule: 'FREQ=DAILY;BYHOUR=10' }) },
          { expectedRevision: 3 },
        ),
      ),
    );
    expect(kept.result).toMatchObject({ lifecycleState: 'active', revision: 4 });
    expectRejected(
      await handler.handle(
        command(
          'definition.revise.v1',
          { definition: definitionBody('r', { revision: 5, lifecycleState: 'paused' }) },
          { expectedRevision: 4 },
        ),
      ),
      'ILLEGAL_TRANSITION',
    );
    const broken = expectCommitted(
      await handler.handle(
        command(
          'definition.revise.v1',
          { definition: definitionBody('r', { revision: 5, lifecycleState: 'active', runtimeId: 'retired-runtime' }) },
          { expectedRevision: 4 },
        ),
      ),
    );
    expect(broken.result).toMatchObject({ lifecycleState: 'invalid', revision: 5 });
    // invalid → paused only through a repairing revise.
    expectRejected(
      await handler.handle(command('definition.activate.v1', { automationId: 'r' }, { expectedRevision: 5 })),
      'ILLEGAL_TRANSITION',
    );
    const repaired = expectCommitted(
      await handler.handle(
        command(
          'definition.revise.v1',
          { definition: definitionBody('r', { revision: 6, lifecycleState: 'paused' }) },
          { expectedRevision: 5 },
        ),
      ),
    );
    expect(repaired.result).toMatchObject({ lifecycleState: 'paused', revision: 6 });
    const kinds = (await store.read((r) => readEventLog(r, { kind: 'automation', id: 'r' }))).map((e) => e.data.kind);
    expect(kinds.slice(-3)).toEqual(['definition.revised', 'definition.invalidated', 'definition.revised']);
  });

  test('list pages by id and hides tombstoned definitions unless asked', async () => {
    const { handler } = setup();
    for (const id of ['a', 'b', 'c'])
      expectCommitted(await handler.handle(command('definition.create.v1', { definition: definitionBody(id) })));
    expectCommitted(
      await handler.handle(command('definition.tombstone.v1', { automationId: 'b' }, { expectedRevision: 1 })),
    );
    const page1 = expectCommitted(await handler.handle(command('definition.list.v1', { limit: 1 })));
    expect(page1.result).toMatchObject({ definitions: [{ automationId: 'a' }], cursor: { hasMore: true } });
    const next = (page1.result!.cursor as { next: string }).next;
    const page2 = expectCommitted(await handler.handle(command('definition.list.v1', { limit: 5, cursor: next })));
    expect((page2.result!.definitions as Array<{ automationId: string }>).map((d) => d.automationId)).toEqual(['c']);
    const all = expectCommitted(await handler.handle(command('definition.list.v1', { lifecycleState: 'all' })));
    expect(all.result!.tombstonedAtById).toHaveProperty('b');
    expect((all.result!.definitions as unknown[]).length).toBe(3);
    expectRejected(await handler.handle(command('definition.list.v1', { cursor: 'garbage' })), 'VALIDATION_FAILED');
    expectRejected(await handler.handle(command('definition.get.v1', { automationId: 'zzz' })), 'NOT_FOUND');
  });

  test('commands whose effects need the scheduler are validated, then refused as unsupported before any write', async () => {
    const { handler, store } = setup();
    const before = await store.read((r) => r.readFeed());
    const r = expectRejected(
      await handler.handle(command('occurrence.runNow.v1', { automationId: 'a' })),
      'CAPABILITY_UNSUPPORTED',
      422,
    );
    expect(r.error?.details).toMatchObject({ variant: 'command.occurrence.runNow.v1' });
    expectRejected(
      await handler.handle(command('attempt.retry.v1', { runId: 'r', priorAttemptNumber: 1 })),
      'VALIDATION_FAILED',
    );
    expect(await store.read((r2) => r2.readFeed())).toEqual(before);
  });
});
