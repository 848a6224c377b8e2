import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { definitionMachine, occurrenceMachine } from '../../machines/index.js';
import { PersistentActor } from '../../src/actors/persistent-actor.js';
import { ContractError } from '../../src/contract/errors.js';
import { packageRoot } from '../../src/contract/package-root.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { TerminalRecordError } from '../../src/store/store.js';
import { jsonStoreBytes } from '../support/store-bytes.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-actor-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `store-${counter++}.json`);
const at = (minute: number) => `2026-03-01T09:${String(minute).padStart(2, '0')}:00.000Z`;
const valid = { valid: true, problems: [] as string[] };
const met = { familiar: true, authority: true, runtime: true };
const ch = 'command_handler' as const;

async function thrown(promise: Promise<unknown>): Promise<ContractError> {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ContractError);
  return error as ContractError;
}

describe('PersistentActor', () => {
  test('survives a store restart with the same state, context and version', async () => {
    const file = freshFile();
    const store = await JsonFileStore.open(file);
    const actor = await PersistentActor.create(
      definitionMachine,
      { store, kind: 'definition', id: 'nightly' },
      { automationId: 'nightly', revision: 1 },
    );
    await actor.send({ type: 'definition_revise_committed', actor: ch, now: at(1), revision: 2, validation: valid });
    await actor.send({ type: 'definition_activated', actor: ch, now: at(2), revision: 3, requirements: met });
    expect(actor.state).toBe('active');
    const before = { state: actor.state, context: actor.context, version: actor.version };
    actor.stop();
    await store.close();

    const reopened = await JsonFileStore.open(file);
    const restored = await PersistentActor.load(definitionMachine, {
      store: reopened,
      kind: 'definition',
      id: 'nightly',
    });
    expect({ state: restored.state, context: restored.context, version: restored.version }).toEqual(before);
    await restored.send({ type: 'definition_paused', actor: ch, now: at(3), revision: 4 });
    expect(restored.state).toBe('paused');
    const log = await reopened.read((r) => r.readLog<{ from: string; to: string }>('definition/nightly'));
    expect(log.map((e) => `${e.data.from}->${e.data.to}`)).toEqual([
      'draft->paused',
      'paused->active',
      'active->paused',
    ]);
    restored.stop();
    await reopened.close();
  });

  test('survives a process restart: another process restores what a child process committed', async () => {
    const file = freshFile();
    const root = packageRoot();
    const output = execFileSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'test/actors/fixtures/advance-occurrence.ts'), file],
      { cwd: root, encoding: 'utf8' },
    );
    const fromChild = JSON.parse(output) as { state: string; context: unknown; version: number };
    expect(fromChild.state).toBe('claimed');
    const store = await JsonFileStore.open(file);
    const restored = await PersistentActor.load(occurrenceMachine, {
      store,
      kind: 'occurrence',
      id: 'nightly@2026-03-01T09:00:00Z',
    });
    expect({ state: restored.state, context: restored.context, version: restored.version }).toEqual(fromChild);
    expect(restored.context.fence).toEqual({
      generation: 1,
      claimedBy: 'engine-a',
      leaseExpiresAt: '2026-03-01T10:00:02.000Z',
    });
    restored.stop();
    await store.close();
  });

  test.each([
    ['an event the state does not accept', { type: 'definition_paused', actor: ch, now: at(1), revision: 2 }],
    [
      'the wrong actor',
      { type: 'definition_revise_committed', actor: 'scheduler', now: at(1), revision: 2, validation: valid },
    ],
    ['a failing guard', { type: 'definition_revise_committed', actor: ch, now: at(1), revision: 1, validation: valid }],
  ])('refuses %s with ILLEGAL_TRANSITION and leaves the store byte-identical', async (_why, event) => {
    const file = freshFile();
    const store = await JsonFileStore.open(file);
    const actor = await PersistentActor.create(
      definitionMachine,
      { store, kind: 'definition', id: 'nightly' },
      { automationId: 'nightly', revision: 1 },
    );
    const bytes = jsonStoreBytes(file);
    const error = await thrown(actor.send(event as never));
    expect(error.toEnvelope()).toMatchObject({
      code: 'ILLEGAL_TRANSITION',
      httpStatus: 422,
      details: { state: 'draft', event: event.type },
    });
    expect(jsonStoreBytes(file)).toBe(bytes);
    expect(actor.state).toBe('draft');
    expect(actor.version).toBe(1);
    actor.stop();
    await store.close();
  });

  test('a terminal entity is sealed: further events are refused and the store refuses direct writes', async () => {
    const store = new MemoryStore();
    const actor = await PersistentActor.create(
      definitionMachine,
      { store, kind: 'definition', id: 'gone' },
      { automationId: 'gone', revision: 1 },
    );
    await actor.send({ type: 'definition_tombstoned', actor: ch, now: at(1), revision: 2 });
    expect(actor.state).toBe('tombstoned');
    expect(actor.snapshot.status).toBe('done');
    expect(
      (
        await thrown(
          actor.send({ type: 'definition_revise_committed', actor: ch, now: at(2), revision: 3, validation: valid }),
        )
      ).code,
    ).toBe('ILLEGAL_TRANSITION');
    const record = await store.read((r) => r.get('definition', 'gone'));
    expect(record?.terminal).toBe(true);
    await expect(
      store.transact((tx) => tx.put('definition', 'gone', {}, { expectedVersion: record!.version })),
    ).rejects.toBeInstanceOf(TerminalRecordError);
    await expect(store.transact((tx) => tx.delete('definition', 'gone', record!.version))).rejects.toBeInstanceOf(
      TerminalRecordError,
    );
  });

  test('creating an existing id is refused and loading a missing one is NOT_FOUND', async () => {
    const store = new MemoryStore();
    await PersistentActor.create(
      definitionMachine,
      { store, kind: 'definition', id: 'a' },
      { automationId: 'a', revision: 1 },
    );
    expect(
      (
        await thrown(
          PersistentActor.create(
            definitionMachine,
            { store, kind: 'definition', id: 'a' },
            { automationId: 'a', revision: 1 },
          ),
        )
      ).code,
    ).toBe('REVISION_CONFLICT');
    expect(
      (await thrown(PersistentActor.load(definitionMachine, { store, kind: 'definition', id: 'b' }))).toEnvelope(),
    ).toMatchObject({ code: 'NOT_FOUND', httpStatus: 404 });
  });

  test('two actors of one entity: the stale one follows the store instead of diverging', async () => {
    const store = new MemoryStore();
    const options = { store, kind: 'definition', id: 'shared' };
    const first = await PersistentActor.create(definitionMachine, options, { automationId: 'shared', revision: 1 });
    const second = await PersistentActor.load(definitionMachine, options);
    await first.send({ type: 'definition_revise_committed', actor: ch, now: at(1), revision: 2, validation: valid });
    // `second` still shows draft, but the machine decides from the stored state: paused accepts activation.
    await second.send({ type: 'definition_activated', actor: ch, now: at(2), revision: 3, requirements: met });
    expect(second.state).toBe('active');
    expect(second.version).toBe(3);
    expect(
      (
        await thrown(
          first.send({ type: 'definition_revise_committed', actor: ch, now: at(3), revision: 4, validation: valid }),
        )
      ).code,
    ).toBe('ILLEGAL_TRANSITION');
  });

  test('the live actor reports inspection events for every committed transition', async () => {
    const store = new MemoryStore();
    const events: InspectionEvent[] = [];
    const actor = await PersistentActor.create(
      definitionMachine,
      { store, kind: 'definition', id: 'seen', inspect: (e) => events.push(e) },
      { automationId: 'seen', revision: 1 },
    );
    await actor.send({ type: 'definition_revise_committed', actor: ch, now: at(1), revision: 2, validation: valid });
    const received = events
      .filter((e) => e.type === '@xstate.event')
      .map((e) => (e as { event: { type: string } }).event.type);
    expect(received).toContain('definition_revise_committed');
    const snapshots = events
      .filter((e) => e.type === '@xstate.snapshot')
      .map((e) => String((e as { snapshot: { value?: unknown } }).snapshot.value));
    expect(snapshots.at(-1)).toBe('paused');
  });
});
