import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { MAX_COMMAND_BYTES } from '../../src/command-handler/envelope.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { command, definitionBody, expectCommitted, expectRejected, expectValidResponse } from '../support/commands.js';
import { jsonStoreBytes } from '../support/store-bytes.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-adoption-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('adoption keys', () => {
  test('an exact repeat replays the first outcome, its revision and eventRef, and writes nothing', async () => {
    const store = new MemoryStore();
    const clock = new SimulatedClock('2026-03-01T08:00:00.000Z');
    const handler = new CommandHandler({ store, clock });
    const create = command(
      'definition.create.v1',
      { definition: definitionBody('a') },
      { adoptionKey: 'key-create-a-0001' },
    );
    const first = expectCommitted(await handler.handle(create));
    clock.advance({ minutes: 5 });
    const feed = await store.read((r) => r.readFeed());
    const again = expectValidResponse(
      await handler.handle({ ...create, origin: { ...create.origin, correlationId: 'redelivery' } }),
    );
    expect(again.outcome).toBe('replayed');
    expect(again.replay).toEqual({ firstCommittedAt: '2026-03-01T08:00:00.000Z' });
    expect(again.result).toEqual(first.result);
    expect(again.revision).toBe(1);
    expect(again.eventRef).toEqual(first.eventRef);
    expect(await store.read((r) => r.readFeed())).toEqual(feed);
  });

  test('the same key with another command or payload is ADOPTION_REPLAY_MISMATCH naming what it committed', async () => {
    const handler = new CommandHandler({
      store: new MemoryStore(),
      clock: new SimulatedClock('2026-03-01T08:00:00.000Z'),
    });
    expectCommitted(
      await handler.handle(
        command('definition.create.v1', { definition: definitionBody('a') }, { adoptionKey: 'key-shared-0001' }),
      ),
    );
    const otherPayload = expectRejected(
      await handler.handle(
        command('definition.create.v1', { definition: definitionBody('b') }, { adoptionKey: 'key-shared-0001' }),
      ),
      'ADOPTION_REPLAY_MISMATCH',
      409,
    );
    expect(otherPayload.error?.adoption).toEqual({ key: 'key-shared-0001', conflictOutcome: 'committed' });
    expect(otherPayload.error?.details).toMatchObject({
      committedCommand: 'definition.create.v1',
      committedOutcome: 'committed',
      committedRevision: 1,
      automationId: 'a',
    });
    expectRejected(
      await handler.handle(
        command('definition.pause.v1', { automationId: 'a' }, { adoptionKey: 'key-shared-0001', expectedRevision: 1 }),
      ),
      'ADOPTION_REPLAY_MISMATCH',
    );
  });

  test('a rejected request commits nothing and is rejected again while nothing changed', async () => {
    const handler = new CommandHandler({
      store: new MemoryStore(),
      clock: new SimulatedClock('2026-03-01T08:00:00.000Z'),
    });
    const pause = command(
      'definition.pause.v1',
      { automationId: 'a' },
      { expectedRevision: 1, adoptionKey: 'key-pause-a-0001' },
    );
    expectRejected(await handler.handle(pause), 'NOT_FOUND');
    expectRejected(await handler.handle(pause), 'NOT_FOUND');
  });

  test('queries echo their key and store nothing under it', async () => {
    const handler = new CommandHandler({
      store: new MemoryStore(),
      clock: new SimulatedClock('2026-03-01T08:00:00.000Z'),
    });
    const list = expectCommitted(
      await handler.handle(command('definition.list.v1', {}, { adoptionKey: 'key-query-0001' })),
    );
    expect(list.adoptionKey).toBe('key-query-0001');
    expectCommitted(
      await handler.handle(
        command('definition.create.v1', { definition: definitionBody('a') }, { adoptionKey: 'key-query-0001' }),
      ),
    );
  });
});

describe('bad input gets a typed error envelope and leaves the JSON store byte-identical', () => {
  test.each<[string, (valid: Record<string, unknown>) => unknown, string, number]>([
    ['malformed JSON', () => '{"schemaVersion": "coven.automations.v1", "command": ', 'VALIDATION_FAILED', 400],
    ['a JSON array', () => '[1,2,3]', 'VALIDATION_FAILED', 400],
    ['a number', () => 42, 'VALIDATION_FAILED', 400],
    ['an unknown envelope field', (v) => ({ ...v, priority: 'high' }), 'VALIDATION_FAILED', 400],
    [
      'an unknown payload field',
      (v) => ({ ...v, payload: { ...(v.payload as object), extra: 1 } }),
      'VALIDATION_FAILED',
      400,
    ],
    ['a wrong type', (v) => ({ ...v, expectedRevision: '2' }), 'VALIDATION_FAILED', 400],
    [
      'a future schema version',
      (v) => ({ ...v, schemaVersion: 'coven.automations.v2' }),
      'SCHEMA_VERSION_UNSUPPORTED',
      400,
    ],
    [
      'a past schema version',
      (v) => ({ ...v, schemaVersion: 'coven.automations.v0' }),
      'SCHEMA_VERSION_UNSUPPORTED',
      400,
    ],
    ['an unknown command', (v) => ({ ...v, command: 'definition.delete.v1' }), 'VALIDATION_FAILED', 400],
    ['a missing adoption key', (v) => ({ ...v, adoptionKey: undefined }), 'VALIDATION_FAILED', 400],
    ['a too-short adoption key', (v) => ({ ...v, adoptionKey: 'k1' }), 'VALIDATION_FAILED', 400],
    ['an adoption key with spaces', (v) => ({ ...v, adoptionKey: 'key with spaces' }), 'VALIDATION_FAILED', 400],
    [
      'a forbidden expectedRevision',
      (v) => ({ ...v, command: 'definition.get.v1', payload: { automationId: 'a' } }),
      'VALIDATION_FAILED',
      400,
    ],
    ['a missing expectedRevision', (v) => ({ ...v, expectedRevision: undefined }), 'VALIDATION_FAILED', 400],
    [
      'an oversized payload',
      (v) => JSON.stringify({ ...v, payload: { automationId: 'a', reason: 'x'.repeat(MAX_COMMAND_BYTES) } }),
      'PAYLOAD_TOO_LARGE',
      413,
    ],
    [
      'an oversized object',
      (v) => ({ ...v, intent: { statement: 'y'.repeat(MAX_COMMAND_BYTES) } }),
      'PAYLOAD_TOO_LARGE',
      413,
    ],
  ])('%s', async (_why, mutate, code, status) => {
    const file = join(dir, `bad-${code}-${Math.random().toString(36).slice(2)}.json`);
    const store = await JsonFileStore.open(file);
    try {
      const handler = new CommandHandler({ store, clock: new SimulatedClock('2026-03-01T08:00:00.000Z') });
      expectCommitted(await handler.handle(command('definition.create.v1', { definition: definitionBody('a') })));
      const bytes = jsonStoreBytes(file);
      const valid = command('definition.pause.v1', { automationId: 'a' }, { expectedRevision: 1 });
      expectRejected(await handler.handle(mutate(valid)), code, status);
      expect(jsonStoreBytes(file)).toBe(bytes);
    } finally {
      await store.close();
    }
  });
});
