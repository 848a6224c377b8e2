import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
// The package's public index, as a user's `import ... from 'coven-automata'` resolves it: no internal module.
import { AutomationClient, createEngine, defineFunctionAutomation, JsonFileStore } from '../../src/index.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

// Written as a new user would: an engine on a JSON store in a temporary folder, a definition from the builder,
// create-and-activate, run now, and the result read back. No cast and no contract field is spelled by hand.
test('embed an engine, define, activate, run now and read the result', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'coven-embed-'));
  folders.push(folder);
  const store = await JsonFileStore.open(join(folder, 'automations.json'));
  const notes = defineFunctionAutomation({
    id: 'daily-notes',
    schedule: { rrule: 'FREQ=DAILY;BYHOUR=9', timezone: 'Europe/Berlin' },
    handler: async (request) => `notes for ${request.occurrenceId}`,
  });
  const engine = createEngine({ store, runtimes: [notes.runtime] });
  const client = new AutomationClient(engine);
  engine.start();
  try {
    const activated = await client.createAndActivate(notes.definition);
    if (!activated.ok) throw new Error(`${activated.error.code}: ${activated.error.message}`);
    expect(activated.value.lifecycleState).toBe('active');

    const started = await client.runNow('daily-notes');
    if (!started.ok) throw new Error(`${started.error.code}: ${started.error.message}`);
    const settled = await client.settled(started.value.occurrenceId, { signal: AbortSignal.timeout(20_000) });
    if (!settled.ok) throw new Error(`${settled.error.code}: ${settled.error.message}`);

    expect(settled.value.occurrence.state).toBe('succeeded');
    const [run] = settled.value.runs;
    expect(run?.state).toBe('succeeded');
    expect(run?.attempts[0]?.receipt?.verified).toBe(true);
    expect(settled.value.receipts).toEqual({ verified: 1, unverified: 0, pending: 0 });

    const history = await client.history('daily-notes');
    if (!history.ok) throw new Error(history.error.message);
    expect(history.value.runs.map((r) => r.receiptRef)).toEqual([run?.receiptRef]);
  } finally {
    await engine.stop();
    await store.close();
  }
});

test('the same program started again replays its create-and-activate and reads the definition as it is', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'coven-embed-'));
  folders.push(folder);
  const file = join(folder, 'automations.json');
  const notes = defineFunctionAutomation({ id: 'notes', schedule: 'FREQ=DAILY;BYHOUR=6', handler: async () => {} });
  for (const round of [1, 2]) {
    const store = await JsonFileStore.open(file);
    const engine = createEngine({ store, runtimes: [notes.runtime] });
    try {
      const client = new AutomationClient(engine);
      const activated = await client.createAndActivate(notes.definition);
      if (!activated.ok) throw new Error(activated.error.message);
      expect(activated.replayed).toBe(round === 2);
      const got = await client.get('notes');
      if (!got.ok) throw new Error(got.error.message);
      expect([got.value.lifecycleState, got.value.revision, got.value.definition.trigger.schedule.rrule]).toEqual([
        'active',
        3,
        'FREQ=DAILY;BYHOUR=6',
      ]);
    } finally {
      await engine.stop();
      await store.close();
    }
  }
});
