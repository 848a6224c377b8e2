import { describe, expect, test } from 'vitest';
import { createActor, transition, type AnyMachineSnapshot } from 'xstate';
import { contractDigestValue, verifyIntegrity } from '../../src/contract/digest.js';
import { validateAgainst, type SchemaName } from '../../src/contract/schemas.js';
import { generatedMachine, machineSpec, sampleEvent, sampleInputs, spec } from '../support/spec-fixtures.js';
import { testVectors, upstreamAvailable, upstreamDir, type VectorCase } from '../support/upstream.js';
import type { MachineId } from '../../src/spec/lifecycle-spec.js';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { recordAdoption, requestDigest } from '../../src/command-handler/adoption.js';
import type { CommandEnvelope } from '../../src/command-handler/envelope.js';
import type { EventEnvelope } from '../../src/changefeed/event-envelope.js';
import { StreamReducer } from '../../src/changefeed/reducer.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { command, definitionBody } from '../support/commands.js';

describe.skipIf(!upstreamAvailable)(`upstream test-vectors.json (${upstreamDir})`, () => {
  const vectors = upstreamAvailable ? testVectors() : { fixtures: {}, cases: [] as VectorCase[], digestRecipe: {} };
  const byKind = (kind: VectorCase['kind']) => vectors.cases.filter((c) => c.kind === kind);

  describe('pinned digests recompute exactly', () => {
    test.each(['definition.golden', 'receipt.golden'])('%s', (name) => {
      const fixture = vectors.fixtures[name] as Record<string, unknown>;
      const verdict = verifyIntegrity(fixture);
      expect(verdict.actual).toBe(verdict.expected);
      expect(verdict.valid).toBe(true);
    });

    test('the receipt pins the definition digest it was produced against', () => {
      const receipt = vectors.fixtures['receipt.golden'] as { definitionDigest: { value: string } };
      expect(receipt.definitionDigest.value).toBe(
        contractDigestValue(vectors.fixtures['definition.golden'] as Record<string, unknown>),
      );
    });

    test('a one-character change breaks the digest', () => {
      const tampered = structuredClone(vectors.fixtures['definition.golden']) as { display: { name: string } };
      tampered.display.name += '!';
      expect(verifyIntegrity(tampered as unknown as Record<string, unknown>).valid).toBe(false);
    });
  });

  describe('schema cases', () => {
    test.each(byKind('schema').map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const verdict = validateAgainst(c.targetSchema as SchemaName, c.object);
      expect(verdict.valid ? 'accept' : 'reject', verdict.problems.join('; ')).toBe(c.expected);
    });

    test('every event of the golden occurrence changefeed validates', () => {
      for (const event of vectors.fixtures['event.occurrence.sequence'] as unknown[]) {
        expect(validateAgainst('event-envelope.schema.json', event).problems).toEqual([]);
      }
    });
  });

  describe('state-machine cases', () => {
    test.each(byKind('stateMachine').map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const id = c.machine as MachineId;
      const { to, on } = c.attemptedTransition as { to: string; on: string };
      expect(machineSpec(id).terminal).toContain(c.fromState);
      expect(machineSpec(id).transitions.filter((t) => t.from === c.fromState)).toEqual([]);
      const machine = generatedMachine(id);
      const context = createActor(machine, { input: sampleInputs[id] }).getSnapshot().context;
      const terminal: AnyMachineSnapshot = machine.resolveState({ value: c.fromState as string, context });
      for (const actor of spec.actors) {
        const event = sampleEvent(on, actor);
        expect(terminal.can(event), `${on} from ${actor}`).toBe(false);
        expect(transition(machine, terminal, event as never)[0]).toBe(terminal);
      }
      expect(c.expected).toBe('reject');
      expect(to).not.toBe(c.fromState);
    });
  });
});

describe.skipIf(!upstreamAvailable)('upstream test-vectors.json: adoption and changefeed cases', () => {
  const vectors = upstreamAvailable ? testVectors() : { fixtures: {}, cases: [] as VectorCase[], digestRecipe: {} };
  const named = (name: string) => {
    const found = vectors.cases.find((c) => c.name === name);
    if (found === undefined) throw new Error(`vector ${name} is missing`);
    return found;
  };
  const events = (vectors.fixtures['event.occurrence.sequence'] ?? []) as EventEnvelope[];
  const stream = { kind: 'occurrence' as const, id: 'daily-notes-1756544400000' };
  type ReadModel = { state: string; eventWindow: { firstSequence: number; lastSequence: number } | null };
  const fold = (model: ReadModel, event: EventEnvelope): ReadModel => ({
    state: String(event.payload.to),
    eventWindow: { firstSequence: model.eventWindow?.firstSequence ?? event.sequence, lastSequence: event.sequence },
  });
  const empty: ReadModel = { state: 'none', eventWindow: null };
  /** The vectors say reject/replayed; responses say rejected/replayed. */
  const outcomeOf = (expected: string) => (expected === 'reject' ? 'rejected' : expected);

  /** A handler whose ledger already holds the vector's `given` commit of the golden create command. */
  async function withCommittedCreate() {
    const store = new MemoryStore();
    const handler = new CommandHandler({ store, clock: new SimulatedClock('2026-08-30T09:05:00.000Z') });
    const golden = vectors.fixtures['command.create.golden'] as CommandEnvelope;
    const given = (
      named('definition-adoption-replay-returns-first-outcome').given as {
        previouslyCommittedAdoptionKeys: Record<string, { committedAt: string; revision: number }>;
      }
    ).previouslyCommittedAdoptionKeys[golden.adoptionKey]!;
    await store.transact((tx) =>
      recordAdoption(tx, golden.adoptionKey, {
        command: golden.command,
        requestDigest: requestDigest(golden),
        committedAt: given.committedAt,
        revision: given.revision,
        result: { automationId: 'daily-notes', revision: given.revision },
        eventRef: { stream: 'automation/daily-notes', sequence: 0 },
        automationId: 'daily-notes',
      }),
    );
    return { store, handler };
  }

  test('definition-adoption-replay-returns-first-outcome', async () => {
    const c = named('definition-adoption-replay-returns-first-outcome');
    const { store, handler } = await withCommittedCreate();
    const before = await store.read((r) => r.readFeed());
    const response = await handler.handle(c.command);
    expect(response.outcome).toBe(outcomeOf(c.expected));
    expect(response).toMatchObject({
      revision: 1,
      replay: { firstCommittedAt: '2026-08-30T09:00:00.000Z' },
      eventRef: { stream: 'automation/daily-notes', sequence: 0 },
    });
    expect(await store.read((r) => r.readFeed())).toEqual(before);
  });

  test('definition-adoption-replay-mismatch-is-a-conflict', async () => {
    const c = named('definition-adoption-replay-mismatch-is-a-conflict');
    const { handler } = await withCommittedCreate();
    const response = await handler.handle(c.command);
    expect(response.outcome).toBe(outcomeOf(c.expected));
    expect(response.error).toMatchObject({ code: c.errorCode, httpStatus: c.httpStatus });
    for (const path of c.detailsMustInclude as string[]) {
      const [head, tail] = path.split('.');
      expect(
        tail === undefined
          ? response.error?.details?.[head!]
          : (response.error as unknown as Record<string, Record<string, unknown>>)[head!]?.[tail],
      ).toBeDefined();
    }
  });

  test('definition-revision-conflict-commits-nothing', async () => {
    const c = named('definition-revision-conflict-commits-nothing');
    const { currentRevision, automationId } = c.given as { currentRevision: number; automationId: string };
    const store = new MemoryStore();
    const handler = new CommandHandler({ store, clock: new SimulatedClock('2026-08-30T09:00:00.000Z') });
    // Bring daily-notes to the vector's current revision through real commands: create, revise, then activate/pause.
    const body = { ...definitionBody(automationId) };
    expect((await handler.handle(command('definition.create.v1', { definition: body }))).outcome).toBe('committed');
    expect(
      (
        await handler.handle(
          command(
            'definition.revise.v1',
            { definition: definitionBody(automationId, { revision: 2, lifecycleState: 'paused' }) },
            { expectedRevision: 1 },
          ),
        )
      ).outcome,
    ).toBe('committed');
    for (let revision = 3; revision <= currentRevision; revision++) {
      const name = revision % 2 === 1 ? 'definition.activate.v1' : 'definition.pause.v1';
      expect((await handler.handle(command(name, { automationId }, { expectedRevision: revision - 1 }))).outcome).toBe(
        'committed',
      );
    }
    const before = await store.read((r) => r.readFeed());
    const response = await handler.handle(c.command);
    expect(response.outcome).toBe(outcomeOf(c.expected));
    expect(response.error).toMatchObject({ code: c.errorCode, httpStatus: c.httpStatus, currentRevision });
    for (const key of c.detailsMustInclude as string[]) expect(response.error?.details?.[key]).toBe(currentRevision);
    expect(await store.read((r) => r.readFeed())).toEqual(before);
  });

  test('event-duplicate-delivery-is-ignored', () => {
    const c = named('event-duplicate-delivery-is-ignored');
    const pick = (ref: string) => events[Number(/\[(\d+)\]$/.exec(ref)![1])]!;
    const withDuplicates = new StreamReducer(stream, fold, empty);
    for (const ref of c.deliveries as string[]) withDuplicates.apply(pick(ref));
    const clean = new StreamReducer(stream, fold, empty);
    for (const e of events.slice(0, 3)) clean.apply(e);
    expect(withDuplicates.state).toEqual(clean.state);
    expect(withDuplicates.cursor).toBe(2);
  });

  test('event-out-of-order-is-rejected-not-reordered', () => {
    const c = named('event-out-of-order-is-rejected-not-reordered');
    // A consumer resumed at cursor 2 (from a checkpoint): it has not seen these event ids in this session.
    const prefix = new StreamReducer(stream, fold, empty);
    for (const e of events.slice(0, (c.consumerCursor as number) + 1)) prefix.apply(e);
    const reducer = new StreamReducer(stream, fold, prefix.state, c.consumerCursor as number);
    const snapshot = structuredClone(reducer.state);
    expect(() => reducer.apply(events[1]!)).toThrow(expect.objectContaining({ code: c.errorCode }));
    expect(reducer.state).toEqual(snapshot);
  });

  test('event-replay-rehydrates-deterministically', () => {
    const fromEmpty = new StreamReducer(stream, fold, empty);
    for (const e of events) fromEmpty.apply(e);
    const withDuplicate = new StreamReducer(stream, fold, empty);
    for (const e of [...events.slice(0, 4), events[3]!, ...events.slice(4)]) withDuplicate.apply(e);
    const prefix = new StreamReducer(stream, fold, empty);
    for (const e of events.slice(0, 3)) prefix.apply(e);
    const resumed = new StreamReducer(stream, fold, structuredClone(prefix.state), 2);
    for (const e of events.slice(3)) resumed.apply(e);
    for (const reducer of [fromEmpty, withDuplicate, resumed]) {
      expect(reducer.state).toEqual({ state: 'succeeded', eventWindow: { firstSequence: 0, lastSequence: 5 } });
    }
  });
});
