import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { CommandHandler } from '../../src/command-handler/command-handler.js';
import { SimulatedClock } from '../../src/clock/clock.js';
import { JsonFileStore } from '../../src/store/json/index.js';
import { command, definitionBody, expectCommitted, expectRejected } from '../support/commands.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-json-commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('the definition lifecycle, reads, events and import survive a JSON store reopen', async () => {
  const file = join(dir, 'store.json');
  const clock = new SimulatedClock('2026-03-01T08:00:00.000Z');
  let store = await JsonFileStore.open(file);
  let handler = new CommandHandler({ store, clock });
  const create = command(
    'definition.create.v1',
    { definition: definitionBody('nightly') },
    { adoptionKey: 'roundtrip-create-01' },
  );
  expectCommitted(await handler.handle(create));
  expectCommitted(
    await handler.handle(
      command(
        'definition.revise.v1',
        { definition: definitionBody('nightly', { revision: 2, lifecycleState: 'paused' }) },
        { expectedRevision: 1 },
      ),
    ),
  );
  expectCommitted(
    await handler.handle(command('definition.activate.v1', { automationId: 'nightly' }, { expectedRevision: 2 })),
  );
  expectCommitted(
    await handler.handle(
      command('legacy.import.v1', {
        source: 'flat-definitions',
        definitions: [
          {
            schemaVersion: 1,
            id: 'legacy',
            name: 'Legacy',
            status: 'PAUSED',
            rrule: 'FREQ=DAILY',
            timezone: 'utc',
            misfire: 'latest',
            overlap: 'forbid',
            timeoutMinutes: 30,
            runtime: 'coven-code',
            prompt: 'Run.',
          },
        ],
      }),
    ),
  );
  const page = expectCommitted(
    await handler.handle(command('events.read.v1', { stream: { kind: 'feed', id: 'all' } })),
  );
  await store.close();

  store = await JsonFileStore.open(file);
  handler = new CommandHandler({ store, clock });
  const replay = await handler.handle(create);
  expect(replay.outcome).toBe('replayed');
  expect(
    expectCommitted(await handler.handle(command('definition.get.v1', { automationId: 'nightly' }))).result,
  ).toMatchObject({ lifecycleState: 'active', revision: 3 });
  expect(
    expectCommitted(await handler.handle(command('definition.get.v1', { automationId: 'legacy' }))).result,
  ).toMatchObject({ lifecycleState: 'draft' });
  const again = expectCommitted(
    await handler.handle(command('events.read.v1', { stream: { kind: 'feed', id: 'all' } })),
  );
  expect(again.result!.events).toEqual(page.result!.events);
  // A checkpoint issued before the reopen resumes after it: it is bound to the store, not the process.
  const resumed = expectCommitted(
    await handler.handle(
      command('events.subscribe.v1', { stream: { kind: 'feed', id: 'all' }, checkpoint: page.result!.checkpoint }),
    ),
  );
  expect(resumed.result!.events).toEqual([]);
  expectRejected(
    await handler.handle(command('definition.activate.v1', { automationId: 'nightly' }, { expectedRevision: 2 })),
    'REVISION_CONFLICT',
  );
  await store.close();
});
