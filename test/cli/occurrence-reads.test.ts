import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, test } from 'vitest';
import { OCCURRENCE_LIVE_STATES, OccurrenceState, RunState } from '../../machines/index.js';
import { runCli } from '../support/run-cli.js';
import { activeDefinition, onlyOccurrence, settle } from './cli-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-occ-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Rewrites a sealed receipt's outcome in the SQLite file behind the engine's back, checksum and all. */
function tamperReceipt(store: string, receiptId: string): void {
  const db = new Database(store);
  try {
    const row = db.prepare("SELECT * FROM records WHERE kind = 'receipt' AND id = ?").get(receiptId) as {
      kind: string;
      id: string;
      version: number;
      terminal: number;
      data: string;
    };
    const data = JSON.parse(row.data) as { outcome: { disposition: string } };
    data.outcome.disposition = 'failed';
    const text = JSON.stringify(data);
    const crc = crc32(text, crc32(`${row.kind}\0${row.id}\0${row.version}\0${row.terminal}\0`));
    db.prepare('UPDATE records SET data = ?, crc = ? WHERE kind = ? AND id = ?').run(text, crc, row.kind, row.id);
  } finally {
    db.close();
  }
}

describe.each(['automations.json', 'automations.sqlite'])('occurrences, occurrence and receipt on %s', (name) => {
  test('a run-now occurrence: listed by view and automation, its detail and timeline, its receipt verified', async () => {
    const folder = mkdtempSync(join(dir, 'store-'));
    const store = join(folder, name);
    const cli = (...args: string[]) => runCli('--store', store, ...args);
    await activeDefinition(store, folder, 'nightly');
    await activeDefinition(store, folder, 'other');
    expect((await cli('occurrences')).out).toBe('no occurrences in view all');
    expect((await cli('--command', 'true', 'run-now', 'nightly')).code).toBe(0);
    const id = await onlyOccurrence(store, 'all', 'nightly');
    expect((await cli('occurrences', '--automation', 'other')).out).toBe('no occurrences in view all');
    expect(await settle(store, id, (s) => !OCCURRENCE_LIVE_STATES.has(s as OccurrenceState))).toBe(
      OccurrenceState.succeeded,
    );
    const listed = await cli('occurrences', '--automation', 'nightly');
    expect(listed.out).toMatch(/^occurrence\s+automation\s+scheduled\s+state\s+run\s+reason/);
    expect(listed.out).toContain(id);
    expect(listed.out).toMatch(/nightly\s+\S+Z\s+succeeded\s+run-occ-/);
    expect((await cli('occurrences', '--view', 'running')).out).toBe('no occurrences in view running');

    const detail = await cli('occurrence', id);
    expect(detail.code).toBe(0);
    expect(detail.out).toContain(`occurrence ${id} of nightly (revision 3)`);
    expect(detail.out).toMatch(/state\s+succeeded/);
    expect(detail.out).toMatch(new RegExp(`run-${id}\\s+succeeded\\s+#1\\s+succeeded\\s+succeeded, verified`));
    expect(detail.out).toContain('receipts: 1 verified, 0 not verified, 0 pending');
    const timeline = await cli('occurrence', id, '--history');
    expect(timeline.out).toMatch(/occurrence\s+occurrence\.transitioned\s+none → planned: manual_request/);
    expect(timeline.out).toMatch(/run\s+run\.transitioned\s+running → succeeded/);
    const json = JSON.parse((await cli('--json', 'occurrence', id, '--history', '--limit', '2')).out) as {
      result: { entries: unknown[]; truncated: boolean };
    };
    expect(json.result.entries).toHaveLength(2);
    expect(json.result.truncated).toBe(true);

    const receipt = await cli('receipt', `run-${id}`);
    expect(receipt.out).toMatch(/^receipt\s+receipt-/);
    expect(receipt.out).toMatch(/outcome\s+succeeded/);
    expect(receipt.out).toMatch(/integrity\s+verified/);
    const verified = await cli('receipt', `run-${id}`, '--verify');
    expect(verified).toMatchObject({ code: 0 });
    expect(verified.out).toMatch(new RegExp(`^receipt receipt-\\S+ of run run-${id}: verified \\(sha256 over`));
    const verifiedJson = JSON.parse((await cli('--json', 'receipt', `run-${id}`, '--verify')).out) as {
      result: { verification: { verified: boolean; actual: string; expected: string } };
    };
    expect(verifiedJson.result.verification).toMatchObject({ verified: true });
    expect(verifiedJson.result.verification.actual).toBe(verifiedJson.result.verification.expected);
  }, 60_000);

  test('reads refuse bad input with one line: unknown ids, views, limits, a run without a receipt', async () => {
    const folder = mkdtempSync(join(dir, 'store-'));
    const store = join(folder, name);
    const cli = (...args: string[]) => runCli('--store', store, ...args);
    await activeDefinition(store, folder, 'nightly');
    expect(await cli('occurrence', 'occ-ghost')).toMatchObject({
      code: 1,
      err: 'NOT_FOUND (404): no occurrence with id occ-ghost',
    });
    expect(await cli('receipt', 'run-ghost')).toMatchObject({
      code: 1,
      err: 'NOT_FOUND (404): no run with id run-ghost',
    });
    expect(await cli('receipt', 'run-ghost', '--verify')).toMatchObject({ code: 1 });
    expect(await cli('occurrences', '--limit', 'ten')).toMatchObject({
      code: 1,
      err: '--limit: expected a whole number from 1 to 100, got "ten"',
    });
    expect(await cli('occurrence', 'occ-ghost', '--limit', '3')).toMatchObject({
      code: 1,
      err: '--limit: only with --history',
    });
    const badCursor = await cli('occurrences', '--cursor', 'bm90LW1pbmU');
    expect(badCursor).toMatchObject({
      code: 1,
      err: expect.stringMatching(/^VALIDATION_FAILED \(400\): cursor is not/),
    });
    // A live run has no receipt yet; --verify says so and exits 1.
    expect((await cli('--command', 'sleep 5', 'run-now', '--no-wait', 'nightly')).code).toBe(0);
    const id = await onlyOccurrence(store, 'running', 'nightly');
    const pending = await cli('receipt', `run-${id}`, '--verify');
    expect(pending).toMatchObject({
      code: 1,
      err: expect.stringMatching(/^NOT_FOUND \(404\): run .* has no receipt yet/),
    });
    expect((await cli('cancel', id)).code).toBe(0);
  }, 60_000);
});

test('receipt --verify recomputes the digest: a receipt altered in the store reads NOT verified, exit 1', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.sqlite');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  await activeDefinition(store, folder, 'nightly');
  expect((await cli('--command', 'true', 'run-now', 'nightly')).code).toBe(0);
  const id = await onlyOccurrence(store, 'all', 'nightly');
  await settle(store, id, (s) => s === OccurrenceState.succeeded);
  const { result } = JSON.parse((await cli('--json', 'receipt', `run-${id}`)).out) as {
    result: { receipt: { receiptId: string } };
  };
  tamperReceipt(store, result.receipt.receiptId);
  const refused = await cli('receipt', `run-${id}`, '--verify');
  expect(refused.code).toBe(1);
  expect(refused.out).toMatch(/: NOT verified: it carries [0-9a-f]{64}, its body digests to [0-9a-f]{64}$/);
  expect((await cli('receipt', `run-${id}`)).out).toMatch(/integrity\s+NOT verified/);
  expect((await cli('occurrence', id)).out).toContain('receipts: 0 verified, 1 not verified, 0 pending');
  const json = JSON.parse((await cli('--json', 'receipt', `run-${id}`, '--verify')).out) as {
    result: { verification: { verified: boolean } };
  };
  expect(json.result.verification.verified).toBe(false);
  expect((await cli('history', 'nightly')).out).toMatch(new RegExp(`run-${id}.*${RunState.succeeded}`));
}, 60_000);
