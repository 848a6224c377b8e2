import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { CONTRACT_COMMANDS } from '../../src/command-handler/envelope.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { SimulatedClock } from '../../src/engine/clock.js';
import { JsonFileStore } from '../../src/store/json-file-store.js';
import { command, definitionBody } from '../support/commands.js';
import { propertyParameters } from '../support/property.js';
import { jsonStoreBytes } from '../support/store-bytes.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-bad-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ids = fc.constantFrom('alpha', 'beta', 'gamma', 'missing');
const key = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{7,40}$/);
const revision = fc.integer({ min: 1, max: 6 });

/** Envelopes that are well-formed and aim at real and missing definitions in every lifecycle command. */
const validEnvelope = fc.oneof(
  fc.tuple(ids, key).map(([id, k]) => command('definition.create.v1', { definition: definitionBody(id) }, { adoptionKey: k })),
  fc.tuple(ids, revision, key).map(([id, r, k]) =>
    command('definition.revise.v1', { definition: definitionBody(id, { revision: r + 1, lifecycleState: 'paused' }) }, { expectedRevision: r, adoptionKey: k }),
  ),
  fc
    .tuple(fc.constantFrom('definition.activate.v1', 'definition.pause.v1', 'definition.disable.v1', 'definition.tombstone.v1', 'x-coven-automata.definition.reenable.v1'), ids, revision, key)
    .map(([name, id, r, k]) => command(name, { automationId: id }, { expectedRevision: r, adoptionKey: k })),
  fc.tuple(ids, key).map(([id, k]) => command('definition.get.v1', { automationId: id }, { adoptionKey: k })),
  key.map((k) => command('definition.list.v1', { lifecycleState: 'all' }, { adoptionKey: k })),
  fc.tuple(ids, key).map(([id, k]) => command('events.read.v1', { stream: { kind: 'automation', id } }, { adoptionKey: k })),
  fc.tuple(ids, key).map(([id, k]) => command('occurrence.runNow.v1', { automationId: id }, { adoptionKey: k })),
);

type Json = Record<string, unknown>;

/** One structural damage to an otherwise valid envelope. */
const mutation: fc.Arbitrary<(e: Json) => unknown> = fc.oneof(
  fc.constantFrom('schemaVersion', 'command', 'adoptionKey', 'origin', 'intent', 'payload', 'expectedRevision').map((field) => (e: Json) => {
    const copy = { ...e };
    delete copy[field];
    return copy;
  }),
  fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue()).map(([field, value]) => (e: Json) => ({ ...e, [`x${field}`]: value })),
  fc.tuple(fc.constantFrom('schemaVersion', 'command', 'adoptionKey', 'expectedRevision', 'payload', 'origin'), fc.jsonValue()).map(([field, value]) => (e: Json) => ({ ...e, [field]: value })),
  fc.jsonValue().map((value) => (e: Json) => ({ ...e, payload: { ...(e.payload as Json), extra: value } })),
  fc.constantFrom('coven.automations.v0', 'coven.automations.v2', 'v1', '').map((v) => (e: Json) => ({ ...e, schemaVersion: v })),
  fc.jsonValue().map((value) => () => value),
  fc.string({ maxLength: 200 }).map((text) => () => text),
  fc.constant((e: Json) => JSON.stringify(e).slice(0, -3)),
);

test('every response validates; every rejected command leaves the JSON store byte-identical', async () => {
  const file = join(dir, 'property.json');
  const store = await JsonFileStore.open(file);
  const handler = new CommandHandler({ store, clock: new SimulatedClock('2026-03-01T08:00:00.000Z') });
  // Seed a definition so that valid envelopes reach real lifecycle states, not only NOT_FOUND.
  await handler.handle(command('definition.create.v1', { definition: definitionBody('alpha') }));
  const codes = new Map<string, number>();
  try {
    await fc.assert(
      fc.asyncProperty(validEnvelope, fc.option(mutation, { freq: 3 }), async (envelope, damage) => {
        const input = damage === null ? envelope : damage(envelope as Json);
        const before = jsonStoreBytes(file);
        const response = await handler.handle(input);
        const verdict = validateAgainst('command-response.schema.json', response);
        expect(verdict.problems, JSON.stringify(response)).toEqual([]);
        expect(['committed', 'replayed', 'rejected']).toContain(response.outcome);
        if (response.outcome === 'rejected') {
          codes.set(response.error!.code, (codes.get(response.error!.code) ?? 0) + 1);
          expect(jsonStoreBytes(file) === before, `rejected ${response.error!.code} changed the store`).toBe(true);
        }
        if (response.outcome === 'replayed') expect(jsonStoreBytes(file) === before).toBe(true);
      }),
      propertyParameters('bad input', 2000),
    );
  } finally {
    await store.close();
  }
  console.info(`[property] bad input: rejection codes seen ${JSON.stringify(Object.fromEntries(codes))}`);
  expect(codes.get('VALIDATION_FAILED')).toBeGreaterThan(0);
  expect(CONTRACT_COMMANDS.length).toBe(19);
}, 120_000);
