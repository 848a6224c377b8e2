import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/engine/engine.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { runCli } from '../support/run-cli.js';
import { definitionFile } from './cli-fixtures.js';
import { command, definitionBody } from '../support/commands.js';

// A new user's first day with the CLI: each refusal names its cause and the command that fixes it.
const dir = mkdtempSync(join(tmpdir(), 'coven-cli-first-day-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fresh = () => mkdtempSync(join(dir, 'case-'));
const storeIn = (folder: string) => join(folder, 'automations.json');

/** A definition file naming `runtimeId` as its runtime. */
function onRuntime(folder: string, automationId: string, runtimeId: string): string {
  const file = definitionFile(folder, automationId);
  const body = JSON.parse(readFileSync(file, 'utf8')) as { runtimeRequirements: { runtimeId: string } };
  body.runtimeRequirements.runtimeId = runtimeId;
  writeFileSync(file, JSON.stringify(body));
  return file;
}

describe('errors name the cause and the fix', () => {
  test('activating a definition on an unregistered runtime names that runtime and the registered ones', async () => {
    const folder = fresh();
    const store = storeIn(folder);
    expect((await runCli('--store', store, 'apply', '-f', onRuntime(folder, 'gpu', 'gpu-runner'))).code).toBe(0);
    const refused = await runCli('--store', store, 'activate', 'gpu');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^ILLEGAL_TRANSITION \(422\)/);
    expect(refused.err).toContain('runtime "gpu-runner" is not registered');
    expect(refused.err).toContain('registered: coven-code');
    expect(refused.err).toContain('paused');
  });

  test('the command API names the runtime too, with the registered ones in the details', async () => {
    const engine = await pausedOnEngine('gpu', 'gpu-runner');
    const refused = await engine.commands.handle(
      command('definition.activate.v1', { automationId: 'gpu' }, { expectedRevision: 2 }),
    );
    expect(refused).toMatchObject({
      outcome: 'rejected',
      error: {
        code: 'ILLEGAL_TRANSITION',
        message: expect.stringContaining('runtime "gpu-runner" is not registered (registered: coven-code)'),
        details: { state: 'paused', unmet: ['runtime'], registeredRuntimes: ['coven-code'] },
      },
    });
  });

  test('an illegal move says the state in words and the command that would move it', async () => {
    const folder = fresh();
    const store = storeIn(folder);
    await runCli('--store', store, 'apply', '-f', definitionFile(folder, 'notes'));
    expect((await runCli('--store', store, 'disable', 'notes')).code).toBe(0);
    const refused = await runCli('--store', store, 'activate', 'notes');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('notes is disabled');
    expect(refused.err).toContain('coven-automata enable notes');
    const pause = await runCli('--store', store, 'pause', 'notes');
    expect(pause.err).toContain('notes is disabled');
  });

  test('a lifecycle command on a definition already in its target state is done: "already active", exit 0', async () => {
    const folder = fresh();
    const store = storeIn(folder);
    await runCli('--store', store, 'apply', '-f', definitionFile(folder, 'notes'));
    expect((await runCli('--store', store, 'activate', 'notes')).out).toBe('notes: active (revision 3)');
    expect(await runCli('--store', store, 'activate', 'notes')).toMatchObject({
      code: 0,
      out: 'notes: already active (revision 3); nothing committed',
    });
    expect((await runCli('--store', store, 'pause', 'notes')).code).toBe(0);
    expect((await runCli('--store', store, 'pause', 'notes')).out).toBe(
      'notes: already paused (revision 4); nothing committed',
    );
    const got = JSON.parse((await runCli('--store', store, '--json', 'get', 'notes')).out) as {
      result: { currentRevision: number };
    };
    expect(got.result.currentRevision).toBe(4);
  });

  test('the command API keeps the contract refusal for activating an active definition', async () => {
    const engine = await pausedOnEngine('notes', 'coven-code');
    const activate = (expectedRevision: number) =>
      engine.commands.handle(command('definition.activate.v1', { automationId: 'notes' }, { expectedRevision }));
    expect((await activate(2)).outcome).toBe('committed');
    expect(await activate(3)).toMatchObject({
      outcome: 'rejected',
      error: { code: 'ILLEGAL_TRANSITION', message: expect.stringContaining('notes is already active') },
    });
  });

  test('apply of an unchanged definition commits nothing and says so', async () => {
    const folder = fresh();
    const store = storeIn(folder);
    const file = definitionFile(folder, 'notes');
    expect((await runCli('--store', store, 'apply', '-f', file)).out).toBe(
      'definition.revise.v1: committed (revision 2)',
    );
    expect(await runCli('--store', store, 'apply', '-f', file)).toMatchObject({
      code: 0,
      out: 'notes: unchanged (revision 2, paused); nothing committed',
    });
    await runCli('--store', store, 'activate', 'notes');
    expect((await runCli('--store', store, 'apply', '-f', file)).out).toBe(
      'notes: unchanged (revision 3, active); nothing committed',
    );
    const events = await runCli('--store', store, '--json', 'events', '--stream', 'automation/notes');
    expect((JSON.parse(events.out) as { result: { events: unknown[] } }).result.events).toHaveLength(3);
  });
});

describe('events and apply refuse bad input without side effects', () => {
  test('events refuses an unknown stream and a bad cursor with typed errors, and prints timestamps', async () => {
    const folder = fresh();
    const store = storeIn(folder);
    await runCli('--store', store, 'apply', '-f', definitionFile(folder, 'notes'));
    const unknown = await runCli('--store', store, 'events', '--stream', 'automation/nope');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/^NOT_FOUND \(404\): no events on stream automation\/nope/);
    const kind = await runCli('--store', store, 'events', '--stream', 'nonsense/nope');
    expect(kind).toMatchObject({ code: 1, err: expect.stringMatching(/^VALIDATION_FAILED \(400\): --stream/) });
    const cursor = await runCli('--store', store, 'events', '--after', 'abc');
    expect(cursor.code).toBe(1);
    expect(cursor.err).toMatch(/^VALIDATION_FAILED \(400\): --after "abc"/);
    expect(cursor.err).not.toContain('NaN');
    const json = await runCli('--store', store, '--json', 'events', '--after', 'abc');
    expect(JSON.parse(json.out)).toMatchObject({ outcome: 'rejected', error: { code: 'VALIDATION_FAILED' } });
    const listed = await runCli('--store', store, 'events', '--stream', 'automation/notes');
    expect(listed.out.split('\n')[0]).toMatch(
      /^ {3}0 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z automation\/notes definition\.created: /,
    );
  });

  test.each([
    ['a file that does not exist', () => join(dir, 'missing.json')],
    ['a file that is not JSON', () => writeTo('not-json.json', '{ nope')],
    ['a definition that fails validation', () => writeTo('invalid.json', JSON.stringify({ automationId: 'x' }))],
    ['flat definitions that all fail', () => writeTo('flat.json', JSON.stringify([{ schemaVersion: 1, id: 'a' }]))],
  ])('a failed apply of %s creates no store', async (_why, make) => {
    const folder = fresh();
    const store = join(folder, '.coven', 'automations.json');
    const applied = await runCli('--store', store, 'apply', '-f', make());
    expect(applied.code).toBe(1);
    expect(applied.err).not.toBe('');
    expect(existsSync(join(folder, '.coven'))).toBe(false);
  });
});

/** An engine on a memory store holding `automationId` paused at revision 2, on `runtimeId`. */
async function pausedOnEngine(automationId: string, runtimeId: string) {
  const engine = createEngine({ store: new MemoryStore(), runtimes: [new SimulatedRuntime()] });
  const created = await engine.commands.handle(
    command('definition.create.v1', { definition: definitionBody(automationId, { runtimeId }) }),
  );
  expect(created.outcome).toBe('committed');
  const paused = definitionBody(automationId, { runtimeId, revision: 2, lifecycleState: 'paused' });
  const revised = await engine.commands.handle(
    command('definition.revise.v1', { definition: paused }, { expectedRevision: 1 }),
  );
  expect(revised.outcome).toBe('committed');
  return engine;
}

function writeTo(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}
