import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, test } from 'vitest';
import { eventIdFor, readStoreId } from '../../src/changefeed/event-envelope.js';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { CONTRACT_COMMANDS, type CommandResponse } from '../../src/command-handler/envelope.js';
import { describeThrown } from '../../src/command-handler/plain-json.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { Store } from '../../src/store/store.js';
import { command, definitionBody } from '../support/commands.js';
import { buildHostile, certainRefusal } from '../support/hostile-input.js';
import { hostileRecipe, validEnvelope, type HostileRecipe } from '../support/hostile-recipes.js';
import { propertyParameters } from '../support/property.js';
import { jsonStoreBytes, memoryStoreState, sqliteStoreBytes } from '../support/store-bytes.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-bad-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Json = Record<string, unknown>;
type StoreKind = 'memory' | 'json' | 'sqlite';
const STORE_KINDS: StoreKind[] = ['memory', 'json', 'sqlite'];

/** A store with a command handler on it and a fingerprint of everything it keeps. */
interface Subject {
  kind: StoreKind;
  store: Store;
  handler: CommandHandler;
  fingerprint(): Promise<string>;
}

let opened = 0;

async function openSubject(kind: StoreKind): Promise<Subject> {
  const file = join(dir, `store-${++opened}.${kind === 'sqlite' ? 'sqlite' : 'json'}`);
  const store: Store =
    kind === 'memory'
      ? new MemoryStore()
      : kind === 'json'
        ? await JsonFileStore.open(file)
        : await SqliteStore.open(file);
  const fingerprint = async () =>
    kind === 'memory'
      ? memoryStoreState(store as MemoryStore)
      : kind === 'json'
        ? jsonStoreBytes(file)
        : sqliteStoreBytes(file).toString('base64');
  return {
    kind,
    store,
    handler: new CommandHandler({ store, clock: new SimulatedClock('2026-03-01T08:00:00.000Z') }),
    fingerprint,
  };
}

/** The handler's answer, which must come (the promise resolves) and be a schema-valid response. */
async function answer(subject: Subject, input: unknown): Promise<CommandResponse> {
  let response: CommandResponse;
  try {
    response = await subject.handler.handle(input);
  } catch (error) {
    throw new Error(`handle() rejected its promise on ${subject.kind}: ${describeThrown(error)}`, { cause: error });
  }
  expect(validateAgainst('command-response.schema.json', response).problems, JSON.stringify(response)).toEqual([]);
  expect(['committed', 'replayed', 'rejected']).toContain(response.outcome);
  return response;
}

/** One structural damage to an otherwise valid envelope. */
const damage: fc.Arbitrary<(e: Json) => unknown> = fc.oneof(
  fc
    .constantFrom('schemaVersion', 'command', 'adoptionKey', 'origin', 'intent', 'payload', 'expectedRevision')
    .map((field) => (e: Json) => {
      const copy = { ...e };
      delete copy[field];
      return copy;
    }),
  fc
    .tuple(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue())
    .map(([field, value]) => (e: Json) => ({ ...e, [`x${field}`]: value })),
  fc
    .tuple(
      fc.constantFrom('schemaVersion', 'command', 'adoptionKey', 'expectedRevision', 'payload', 'origin'),
      fc.jsonValue(),
    )
    .map(([field, value]) => (e: Json) => ({ ...e, [field]: value })),
  fc.jsonValue().map((value) => (e: Json) => ({ ...e, payload: { ...(e.payload as Json), extra: value } })),
  fc
    .constantFrom('coven.automations.v0', 'coven.automations.v2', 'v1', '')
    .map((v) => (e: Json) => ({ ...e, schemaVersion: v })),
  fc.jsonValue().map((value) => () => value),
  fc.string({ maxLength: 200 }).map((text) => () => text),
  fc.constant((e: Json) => JSON.stringify(e).slice(0, -3)),
);

const storeKind = fc.constantFrom(...STORE_KINDS);

/** A test's time limit: CI sizes finish far inside three minutes; an FC_RUNS run gets 100 ms more per run. */
const timeLimit = 180_000 + 100 * Number(process.env.FC_RUNS ?? 0);

function countInto(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function label(recipe: HostileRecipe): string {
  return 'raw' in recipe
    ? `raw:${recipe.raw}`
    : recipe.hostility.kind === 'trap'
      ? `trap:${recipe.hostility.trap}`
      : recipe.hostility.kind;
}

describe('bad input: the promise always resolves with a typed envelope, and a rejection writes nothing', () => {
  const subjects = new Map<StoreKind, Subject>();
  afterAll(async () => {
    for (const subject of subjects.values()) await subject.store.close();
  });

  async function seeded(kind: StoreKind): Promise<Subject> {
    let subject = subjects.get(kind);
    if (subject === undefined) {
      subject = await openSubject(kind);
      // A live definition, so that valid envelopes reach real lifecycle states, not only NOT_FOUND.
      await subject.handler.handle(command('definition.create.v1', { definition: definitionBody('alpha') }));
      subjects.set(kind, subject);
    }
    return subject;
  }

  test(
    'damaged envelopes, on the memory, JSON and SQLite stores',
    async () => {
      const codes = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(storeKind, validEnvelope, fc.option(damage, { freq: 3 }), async (kind, envelope, hurt) => {
          const subject = await seeded(kind);
          const before = await subject.fingerprint();
          const response = await answer(subject, hurt === null ? envelope : hurt(envelope));
          if (response.outcome === 'committed') return;
          countInto(codes, response.outcome === 'rejected' ? response.error!.code : 'replayed');
          expect(response.error?.code).not.toBe('INTERNAL');
          expect(
            (await subject.fingerprint()) === before,
            `${response.outcome} ${response.error?.code ?? ''} changed the ${kind} store`,
          ).toBe(true);
        }),
        propertyParameters('bad input: damaged envelopes', 800),
      );
      console.info(`[property] bad input: damaged envelopes: answers ${JSON.stringify(Object.fromEntries(codes))}`);
      expect(codes.get('VALIDATION_FAILED')).toBeGreaterThan(0);
      expect(CONTRACT_COMMANDS.length).toBe(19);
    },
    timeLimit,
  );

  test(
    'Proxies, throwing getters and toJSON, revoked proxies, cycles, BigInt, symbols, functions, depth and size',
    async () => {
      const kinds = new Map<string, number>();
      const codes = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(storeKind, validEnvelope, hostileRecipe, async (kind, envelope, recipe) => {
          const subject = await seeded(kind);
          const before = await subject.fingerprint();
          const response = await answer(subject, buildHostile(envelope, recipe));
          countInto(kinds, label(recipe));
          countInto(codes, response.error?.code ?? response.outcome);
          const certain = certainRefusal(recipe);
          if (certain !== undefined) expect(response.error?.code, JSON.stringify(response)).toBe(certain);
          if (response.outcome === 'committed') return;
          expect(response.error?.code, JSON.stringify(response.error)).not.toBe('INTERNAL');
          expect(
            (await subject.fingerprint()) === before,
            `${response.outcome} ${response.error?.code ?? ''} changed the ${kind} store`,
          ).toBe(true);
        }),
        propertyParameters('bad input: hostile values', 1000),
      );
      console.info(
        `[property] bad input: hostile values: recipes ${JSON.stringify(Object.fromEntries(kinds))}; answers ${JSON.stringify(Object.fromEntries(codes))}`,
      );
      for (const code of ['VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE']) expect(codes.get(code)).toBeGreaterThan(0);
    },
    timeLimit,
  );
});

/** Commands every fresh store must refuse: lifecycle changes of nothing, bad bodies, an import of only invalid definitions. */
const certainlyRefusedOnAFreshStore: fc.Arbitrary<Json> = fc.oneof(
  fc
    .constantFrom(
      'definition.activate.v1',
      'definition.pause.v1',
      'definition.disable.v1',
      'definition.tombstone.v1',
      'x-coven-automata.definition.unquarantine.v1',
    )
    .map((name) => command(name, { automationId: 'alpha' }, { expectedRevision: 1 })),
  fc.constant(
    command(
      'definition.revise.v1',
      { definition: definitionBody('alpha', { revision: 2, lifecycleState: 'paused' }) },
      { expectedRevision: 1 },
    ),
  ),
  fc.constant(
    command('definition.create.v1', {
      definition: { ...definitionBody('alpha'), integrity: `sha256:${'0'.repeat(64)}` },
    }),
  ),
  fc.constant(command('occurrence.runNow.v1', { automationId: 'alpha' })),
  fc.constant(
    command('legacy.import.v1', { source: 'flat-definitions', definitions: [{ schemaVersion: 1, id: 'broken' }, 42] }),
  ),
);

test(
  'the first refused command on a fresh store leaves it byte-identical (memory, JSON, SQLite)',
  async () => {
    const codes = new Map<string, number>();
    const input = fc.oneof(
      certainlyRefusedOnAFreshStore.map((envelope) => ({ envelope, certain: true as const })),
      fc.tuple(validEnvelope, hostileRecipe).map(([envelope, recipe]) => ({ envelope, recipe })),
      fc.tuple(validEnvelope, damage).map(([envelope, hurt]) => ({ envelope, hurt })),
    );
    await fc.assert(
      fc.asyncProperty(storeKind, input, async (kind, chosen) => {
        const subject = await openSubject(kind);
        try {
          const before = await subject.fingerprint();
          const raw =
            'recipe' in chosen
              ? buildHostile(chosen.envelope, chosen.recipe)
              : 'hurt' in chosen
                ? chosen.hurt(chosen.envelope)
                : chosen.envelope;
          const response = await answer(subject, raw);
          if ('certain' in chosen) expect(response.outcome, JSON.stringify(response)).toBe('rejected');
          if (response.outcome !== 'rejected') return;
          countInto(codes, response.error!.code);
          expect(response.error!.code).not.toBe('INTERNAL');
          expect(
            (await subject.fingerprint()) === before,
            `${response.error!.code} wrote to a fresh ${kind} store`,
          ).toBe(true);
          expect(await subject.store.read(readStoreId)).toBeUndefined();
        } finally {
          await subject.store.close();
        }
      }),
      propertyParameters('bad input: fresh stores', 120),
    );
    console.info(`[property] bad input: fresh stores: rejections ${JSON.stringify(Object.fromEntries(codes))}`);
    expect([...codes.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  },
  timeLimit,
);

describe.each(STORE_KINDS)('a fresh %s store gets its id from its first committed command', (kind) => {
  test('a refusal and a dry run write nothing; the first accepted command stores the id its events derive from', async () => {
    const subject = await openSubject(kind);
    try {
      const empty = await subject.fingerprint();
      expect(
        (await answer(subject, command('definition.pause.v1', { automationId: 'alpha' }, { expectedRevision: 1 })))
          .error?.code,
      ).toBe('NOT_FOUND');
      const flat = {
        schemaVersion: 1,
        id: 'flat',
        name: 'Flat',
        status: 'PAUSED',
        rrule: 'FREQ=DAILY',
        timezone: 'utc',
        misfire: 'latest',
        overlap: 'forbid',
        timeoutMinutes: 5,
        runtime: 'coven-code',
        prompt: 'p',
      };
      const dry = await answer(
        subject,
        command('legacy.import.v1', { source: 'flat-definitions', definitions: [flat], dryRun: true }),
      );
      expect(dry.result?.imported).toEqual(['flat']);
      expect((await subject.fingerprint()) === empty, 'a refusal or a dry run wrote to a fresh store').toBe(true);
      const created = await answer(subject, command('definition.create.v1', { definition: definitionBody('alpha') }));
      expect(created.outcome).toBe('committed');
      const storeId = await subject.store.read(readStoreId);
      expect(storeId).toMatch(/^[0-9a-f]{32}$/);
      const events = await answer(subject, command('events.read.v1', { stream: { kind: 'automation', id: 'alpha' } }));
      const [event] = events.result?.events as Array<{ eventId: string; sequence: number }>;
      expect(event?.eventId).toBe(eventIdFor(storeId!, { kind: 'automation', id: 'alpha' }, event!.sequence));
      // A second handler on the same store reads the stored id instead of minting its own.
      const other = new CommandHandler({ store: subject.store, clock: new SimulatedClock('2026-03-01T09:00:00.000Z') });
      expect(
        (await other.handle(command('definition.create.v1', { definition: definitionBody('beta') }))).outcome,
      ).toBe('committed');
      expect(await subject.store.read(readStoreId)).toBe(storeId);
    } finally {
      await subject.store.close();
    }
  });
});
