import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { OccurrenceState } from '../../machines/index.js';
import { runCli } from '../support/run-cli.js';
import { activeDefinition, onlyOccurrence, settle } from './cli-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-cancel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('cancel of a running session exits 0 and says the request is pending until the runtime acknowledges', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  await activeDefinition(store, folder, 'nightly');
  // The session runs until the cancellation stops it; the test never waits on it running out.
  expect((await cli('--command', 'sleep 60', 'run-now', '--no-wait', 'nightly')).code).toBe(0);
  const id = await onlyOccurrence(store, 'running', 'nightly');
  const pending = await cli('cancel', id, '--reason', 'operator stop');
  expect(pending).toMatchObject({ code: 0, err: '' });
  expect(pending.out).toBe(
    `${id}: cancellation requested; pending until the runtime acknowledges ` +
      '(the session has been told to stop; `occurrence` shows when it settles)',
  );
  // --json prints the contract's answer as it is (CANCEL_PENDING, retryable), and still exits 0.
  const json = await cli('--json', 'cancel', id);
  expect(json.code).toBe(0);
  expect(JSON.parse(json.out)).toMatchObject({
    outcome: 'rejected',
    error: { code: 'CANCEL_PENDING', httpStatus: 409, retryable: true },
  });
  // Once the runtime acknowledges (the engine observes the stopped session), it is cancelled.
  expect(await settle(store, id, (s) => s === OccurrenceState.cancelled)).toBe(OccurrenceState.cancelled);
  expect(await cli('cancel', id)).toMatchObject({ code: 0, out: `${id}: cancelled` });
}, 60_000);

test('cancel of an occurrence with nothing to cancel or none at all still fails with the typed line', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  await activeDefinition(store, folder, 'nightly');
  expect(await runCli('--store', store, 'cancel', 'occ-ghost')).toMatchObject({
    code: 1,
    err: expect.stringMatching(/^NOT_FOUND \(404\): .*occ-ghost/),
  });
  expect((await runCli('--store', store, '--command', 'true', 'run-now', 'nightly')).code).toBe(0);
  const id = await onlyOccurrence(store, 'all', 'nightly');
  await settle(store, id, (s) => s === OccurrenceState.succeeded);
  expect(await runCli('--store', store, 'cancel', id)).toMatchObject({
    code: 1,
    err: `ILLEGAL_TRANSITION (422): occurrence ${id} already settled succeeded; completion won`,
  });
}, 60_000);
