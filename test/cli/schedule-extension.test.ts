import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { runCli } from '../support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-schedule-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const QUARTER_HOUR_MS = 15 * 60_000;

test('apply -f a cron-scheduled file, then next --count 4 lists four instants 15 minutes apart', async () => {
  const store = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  const applied = await cli('apply', '-f', 'examples/quarter-hour-notes.json');
  expect(applied.code, applied.err).toBe(0);
  expect((await cli('apply', '-f', 'examples/quarter-hour-notes.json')).out).toMatch(/unchanged/);

  const before = Date.now();
  const json = await cli('next', 'quarter-hour-notes', '--count', '4', '--json');
  expect(json.code, json.err).toBe(0);
  const preview = JSON.parse(json.out) as { cron: string; timezone: string; scheduledTimes: string[] };
  expect(preview).toMatchObject({ cron: '*/15 * * * *', timezone: 'Europe/Berlin' });
  const times = preview.scheduledTimes.map(Date.parse);
  expect(times).toHaveLength(4);
  expect(times[0]! - before).toBeLessThanOrEqual(QUARTER_HOUR_MS);
  for (const [i, t] of times.entries()) {
    expect(t % QUARTER_HOUR_MS).toBe(0);
    if (i > 0) expect(t - times[i - 1]!).toBe(QUARTER_HOUR_MS);
  }

  const human = await cli('next', 'quarter-hour-notes', '--count', '4');
  expect(human.out.split('\n')[0]).toMatch(/^quarter-hour-notes \(paused\): cron \*\/15 \* \* \* \* in Europe\/Berlin/);
  expect(human.out).toMatch(/Europe\/Berlin\n/);
});

test('backfill plans a past range once: the second time every slot already has its occurrence', async () => {
  const store = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  expect((await cli('apply', '-f', 'examples/quarter-hour-notes.json')).code).toBe(0);
  expect((await cli('activate', 'quarter-hour-notes')).code).toBe(0);
  const range = ['--from', '2026-12-01T08:00:00Z', '--until', '2026-12-01T09:00:00Z'];
  const first = await cli('backfill', 'quarter-hour-notes', ...range);
  expect(first.code, first.err).toBe(0);
  expect(first.out).toMatch(/^quarter-hour-notes: 5 slot\(s\) in the range, 5 planned, 0 already had an occurrence; /);
  const second = await cli('backfill', 'quarter-hour-notes', ...range);
  expect(second.out).toBe('quarter-hour-notes: 5 slot(s) in the range, 0 planned, 5 already had an occurrence');
  const future = await cli(
    'backfill',
    'quarter-hour-notes',
    '--from',
    '2026-12-01T08:00:00Z',
    '--until',
    '2999-01-01T00:00:00Z',
  );
  expect(future.code).not.toBe(0);
  expect(future.err).toMatch(/VALIDATION_FAILED.*in the future/);
});

test('apply -f refuses a file whose schedule extension is malformed, naming the field, and writes nothing', async () => {
  const store = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  const file = join(dir, 'bad-cron.json');
  const body = JSON.parse(readFileSync('examples/quarter-hour-notes.json', 'utf8')) as Record<string, unknown>;
  body.automationId = 'bad-cron';
  body.extensions = { 'x-coven-automata.schedule.v1': { cron: '*/15 * * *', timezone: 'Europe/Berlin' } };
  writeFileSync(file, JSON.stringify(body));
  const refused = await runCli('--store', store, 'apply', '-f', file);
  expect(refused.code).not.toBe(0);
  expect(refused.err).toMatch(/VALIDATION_FAILED/);
  expect(refused.err).toMatch(/4 fields/);
  const listed = await runCli('--store', store, '--json', 'list', '--all');
  expect(listed.out).not.toMatch(/bad-cron/);
});
