import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { OccurrenceState } from '../../machines/index.js';
import { previewLines, previewSchedule } from '../../src/cli/next-command.js';
import { runCli } from '../support/run-cli.js';
import { activeDefinition, onlyOccurrence, settle } from './cli-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-list-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOUR_MS = 3_600_000;

test('list shows each definition with its next run (active only) and its last run result', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.sqlite');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  await activeDefinition(store, folder, 'nightly');
  await activeDefinition(store, folder, 'paused-one');
  await activeDefinition(store, folder, 'gone');
  expect((await cli('pause', 'paused-one')).code).toBe(0);
  expect((await cli('tombstone', 'gone')).code).toBe(0);
  expect((await cli('--command', 'true', 'run-now', 'nightly')).code).toBe(0);
  await settle(store, await onlyOccurrence(store, 'all', 'nightly'), (s) => s === OccurrenceState.succeeded);
  const before = Date.now();
  const listed = await cli('list');
  expect(listed.code).toBe(0);
  const [header, ...rows] = listed.out.split('\n');
  expect(header).toMatch(/^automation\s+name\s+state\s+revision\s+next run\s+last result\s*$/);
  expect(rows).toHaveLength(2);
  const nightly = rows
    .find((r) => r.startsWith('nightly'))!
    .trim()
    .split(/\s{2,}/);
  expect(nightly.slice(0, 4)).toEqual(['nightly', 'Job nightly', 'active', '3']);
  // The next run is the rule's next slot (02:00 UTC daily): within a day from now, on the hour.
  const next = Date.parse(nightly[4]!);
  expect(next).toBeGreaterThan(before - 1000);
  expect(next - before).toBeLessThanOrEqual(24 * HOUR_MS);
  expect(new Date(next).getUTCHours()).toBe(2);
  expect(nightly[5]).toBe('succeeded');
  expect(
    rows
      .find((r) => r.startsWith('paused-one'))!
      .trim()
      .split(/\s{2,}/),
  ).toEqual(['paused-one', 'Job paused-one', 'paused', '4', '-', '-']);
  expect((await cli('list', '--all')).out).toMatch(/\ngone\s+Job gone\s+tombstoned\s+4\s+-\s+-/);
  // --json stays the contract's definition.list.v1 response.
  const json = JSON.parse((await cli('--json', 'list')).out) as { result: { definitions: object[] } };
  expect(json.result.definitions[0]).not.toHaveProperty('nextRun');
}, 60_000);

test('next previews the next N slots of the trigger from now, in UTC and the zone; paused says nothing is planned', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  await activeDefinition(store, folder, 'nightly');
  const before = Date.now();
  const json = await cli('--json', 'next', 'nightly', '--count', '4');
  expect(json.code).toBe(0);
  const preview = JSON.parse(json.out) as { scheduledTimes: string[]; rrule: string; timezone: string };
  expect(preview).toMatchObject({ rrule: 'FREQ=DAILY;BYHOUR=2', timezone: 'utc' });
  const times = preview.scheduledTimes.map((t) => Date.parse(t));
  expect(times).toHaveLength(4);
  expect(times[0]! - before).toBeLessThanOrEqual(24 * HOUR_MS);
  expect(times[0]).toBeGreaterThan(before - 1000);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(24 * HOUR_MS);
  const human = await cli('next', 'nightly', '--count', '2');
  const lines = human.out.split('\n');
  expect(lines[0]).toMatch(/^nightly \(active\): FREQ=DAILY;BYHOUR=2 in utc, next 2 after 20\d\d-/);
  expect(lines.slice(1)).toHaveLength(2);
  for (const line of lines.slice(1))
    expect(line).toMatch(/^ {2}20\d\d-\d\d-\d\dT02:00:00\.000Z {2}20\d\d-\d\d-\d\d 02:00 UTC$/);
  expect((await cli('next', 'nightly')).out.split('\n')).toHaveLength(6);
  expect((await cli('pause', 'nightly')).code).toBe(0);
  expect((await cli('next', 'nightly', '--count', '1')).out).toMatch(
    /\nnote: nightly is paused; nothing is planned until it is active$/,
  );
  expect(await cli('next', 'ghost')).toMatchObject({ code: 1, err: 'NOT_FOUND (404): no definition with id ghost' });
  for (const bad of ['0', 'many', '1001'])
    expect(await cli('next', 'nightly', '--count', bad)).toMatchObject({
      code: 1,
      err: `--count: expected a whole number from 1 to 1000, got "${bad}"`,
    });
}, 60_000);

test("the preview follows the engine's schedule across a DST change: a slot the gap swallows is skipped", async () => {
  const got = {
    automationId: 'berlin',
    lifecycleState: 'active',
    definition: { trigger: { schedule: { rrule: 'FREQ=DAILY;BYHOUR=2', timezone: 'Europe/Berlin' } } },
  };
  // Europe/Berlin springs forward at 02:00 on 2026-03-29: that day has no 02:00.
  const preview = await previewSchedule(got, 3, new Date('2026-03-27T12:00:00Z'));
  expect(preview.scheduledTimes).toEqual([
    '2026-03-28T01:00:00.000Z',
    '2026-03-30T00:00:00.000Z',
    '2026-03-31T00:00:00.000Z',
  ]);
  expect(previewLines(preview).split('\n')).toEqual([
    'berlin (active): FREQ=DAILY;BYHOUR=2 in Europe/Berlin, next 3 after 2026-03-27T12:00:00.000Z',
    '  2026-03-28T01:00:00.000Z  2026-03-28 02:00 Europe/Berlin',
    '  2026-03-30T00:00:00.000Z  2026-03-30 02:00 Europe/Berlin',
    '  2026-03-31T00:00:00.000Z  2026-03-31 02:00 Europe/Berlin',
  ]);
});
