import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { runCli } from '../support/run-cli.js';
import { runDemo } from '../../src/cli/demo.js';
import { renderDiagrams } from '../../src/cli/diagram-command.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = runCli;

describe.each(['automations.json', 'automations.sqlite'])('the coven-automata CLI on %s', (storeName) => {
  let store: string;
  beforeEach(() => {
    store = join(mkdtempSync(join(dir, 'store-')), storeName);
  });
  afterEach(() => vi.restoreAllMocks());

  test('apply, activate, list, get, health, history, run-now, events: the daily journey with --json where asked', async () => {
    const definition = join(dir, 'nightly.json');
    writeFileSync(
      definition,
      JSON.stringify({
        schemaVersion: 'coven.automations.v1',
        automationId: 'nightly',
        display: { name: 'Nightly' },
        trigger: {
          variant: 'schedule',
          version: 1,
          schedule: { rrule: 'FREQ=DAILY;BYHOUR=2', timezone: 'Europe/Berlin' },
        },
        action: { variant: 'familiarInvocation', version: 1, prompt: 'nightly job', cwd: dirname(store) },
        binding: {
          familiarBindingPolicy: 'exact',
          familiarId: 'charm',
          authority: { approvalPolicyRef: 'policy://charm' },
        },
        runtimeRequirements: { runtimeId: 'coven-code', capabilities: [] },
        policies: {
          timeout: { perRunMinutes: 10 },
          retry: { maxAttempts: 1, backoffPolicy: 'none' },
          concurrency: { overlap: 'forbid' },
          misfire: { disposition: 'latest' },
          retention: { occurrenceHistory: { classification: 'standard' } },
        },
      }),
    );
    expect((await cli('--store', store, 'apply', '-f', definition)).code).toBe(0);
    expect((await cli('--store', store, 'activate', 'nightly')).out).toBe('nightly: active (revision 3)');
    expect((await cli('--store', store, 'list')).out).toMatch(/nightly\s+Nightly\s+active\s+3/);
    const got = JSON.parse((await cli('--store', store, '--json', 'get', 'nightly')).out) as {
      outcome: string;
      result: { lifecycleState: string };
    };
    expect(got).toMatchObject({ outcome: 'committed', result: { lifecycleState: 'active' } });
    expect((await cli('--store', store, 'health', 'nightly')).out).toMatch(/nextDueAt\s+"20\d\d-/);
    const runNow = await cli('--store', store, '--command', 'true', 'run-now', 'nightly');
    expect(runNow.code).toBe(0);
    expect((await cli('--store', store, 'history', 'nightly')).out).toMatch(/run-occ-manual-[0-9a-f]+/);
    expect((await cli('--store', store, 'events', '--stream', 'automation/nightly')).out).toContain(
      'definition.activated',
    );
  });

  test('user errors print the contract code, status and a one-line explanation, with exit code 1', async () => {
    const missing = await cli('--store', store, 'activate', 'ghost');
    expect(missing).toMatchObject({ code: 1, err: 'NOT_FOUND (404): no definition with id ghost' });
    const badFile = join(dir, 'bad.json');
    writeFileSync(badFile, '{ not json');
    expect(await cli('--store', store, 'apply', '-f', badFile)).toMatchObject({ code: 1 });
    expect((await cli('--store', store, 'apply', '-f', badFile)).err).toMatch(/is not valid JSON/);
    const corrupt = join(dir, 'corrupt.json');
    writeFileSync(corrupt, 'garbage');
    expect((await cli('--store', corrupt, 'list')).err).toMatch(/^INTERNAL \(500\): store file .* cannot be used/);
    expect(readFileSync(corrupt, 'utf8')).toBe('garbage');
    const foreign = join(dir, 'foreign.sqlite');
    writeFileSync(foreign, 'garbage');
    expect((await cli('--store', foreign, 'list')).err).toMatch(/^INTERNAL \(500\): store file .* cannot be used/);
    expect((await cli('--store', foreign, '--store-kind', 'json', 'list')).err).toMatch(
      /^INTERNAL \(500\): store file .* cannot be used/,
    );
    expect(readFileSync(foreign, 'utf8')).toBe('garbage');
  });

  test('verify checks integrity digests', async () => {
    const file = join(dir, 'receipt.json');
    writeFileSync(
      file,
      JSON.stringify({
        receiptId: 'r',
        integrity: { algorithm: 'sha256', canonicalization: 'jcs-rfc8785', value: '0'.repeat(64) },
      }),
    );
    expect(await cli('verify', file)).toMatchObject({ code: 1 });
  });
});

test.each(['demo.json', 'demo.sqlite'])(
  'the demo (npm start) runs four simulated days on a fresh %s store and verifies every receipt',
  async (file) => {
    const lines: string[] = [];
    const result = await runDemo(join(dir, file), (...l) => lines.push(...l));
    const text = lines.join('\n');
    expect(result.receipts).toBeGreaterThanOrEqual(5);
    expect(result.verified).toBe(result.receipts);
    expect(text).toContain('CANCEL_PENDING (409)');
    expect(text).toMatch(/operator_recovery\s+#1 ambiguous\s+succeeded/);
    expect(text).toMatch(/automatic_retry\s+#1 failed\s+succeeded/);
    expect(text).toMatch(/occurrence running → cancelled/);
  },
);

test('docs/machines.md diagrams and docs/*.svg match the spec (npm run diagrams)', async () => {
  const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  try {
    expect(await renderDiagrams('docs', true)).toBe(0);
  } finally {
    error.mockRestore();
    log.mockRestore();
  }
});
