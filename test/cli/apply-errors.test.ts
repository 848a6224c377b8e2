import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, test } from 'vitest';
import { errorLine, PROBLEMS_SHOWN } from '../../src/cli/error-line.js';
import { MAX_NESTING_DEPTH } from '../../src/command-handler/plain-json.js';
import { runCli } from '../support/run-cli.js';
import { jsonStoreBytes, sqliteStoreBytes } from '../support/store-bytes.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-apply-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const flat = (id: string, changes: Record<string, unknown> = {}) => ({
  schemaVersion: 1,
  id,
  name: `Flat ${id}`,
  status: 'PAUSED',
  rrule: 'FREQ=DAILY',
  timezone: 'utc',
  misfire: 'latest',
  overlap: 'forbid',
  timeoutMinutes: 5,
  runtime: 'coven-code',
  prompt: 'p',
  ...changes,
});

const rich = (id: string, changes: Record<string, unknown> = {}) => ({
  schemaVersion: 'coven.automations.v1',
  automationId: id,
  display: { name: id },
  trigger: { variant: 'schedule', version: 1, schedule: { rrule: 'FREQ=DAILY', timezone: 'utc' } },
  action: { variant: 'familiarInvocation', version: 1, prompt: 'hi' },
  binding: { familiarBindingPolicy: 'exact', familiarId: 'charm', authority: { approvalPolicyRef: 'policy://charm' } },
  runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
  policies: {
    timeout: { perRunMinutes: 5 },
    retry: { maxAttempts: 1, backoffPolicy: 'none' },
    concurrency: { overlap: 'forbid' },
    misfire: { disposition: 'latest' },
    retention: { occurrenceHistory: { classification: 'standard' } },
  },
  ...changes,
});

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe.each(['automations.json', 'automations.sqlite'])(
  'apply -f refuses bad files with a typed error and writes nothing, on %s',
  (storeName) => {
    let store: string;
    let bytes: () => string;
    beforeEach(async () => {
      store = join(mkdtempSync(join(dir, 'store-')), storeName);
      bytes = () =>
        storeName.endsWith('.sqlite') ? sqliteStoreBytes(store).toString('base64') : jsonStoreBytes(store);
      // A fresh store as `init` leaves it: no store id, no adoption record yet.
      expect((await runCli('--store', store, 'init')).code).toBe(0);
    });

    test('a null, a number and too deep a file answer VALIDATION_FAILED (400), not INTERNAL', async () => {
      const fresh = bytes();
      const deep = `{"automationId":"x","extensions":${'['.repeat(MAX_NESTING_DEPTH)}${']'.repeat(MAX_NESTING_DEPTH)}}`;
      for (const [name, content, why] of [
        ['null.json', 'null', /must hold a JSON object or array, not null$/],
        ['number.json', '7', /not a number$/],
        ['deep.json', deep, new RegExp(`nests objects and arrays deeper than ${MAX_NESTING_DEPTH} levels$`)],
      ] as const) {
        const result = await runCli('--store', store, 'apply', '-f', file(name, content));
        expect(result.code, name).toBe(1);
        expect(result.err, name).toMatch(/^VALIDATION_FAILED \(400\): /);
        expect(result.err, name).toMatch(why);
      }
      const json = JSON.parse(
        (await runCli('--store', store, '--json', 'apply', '-f', join(dir, 'null.json'))).out,
      ) as { outcome: string; error: { code: string } };
      expect(json).toMatchObject({ outcome: 'rejected', error: { code: 'VALIDATION_FAILED' } });
      expect(bytes() === fresh, 'a refused file changed the store').toBe(true);
    });

    test('a flat file whose every definition fails exits 1, names each failure and commits nothing (no adoption record)', async () => {
      const fresh = bytes();
      const result = await runCli(
        '--store',
        store,
        'apply',
        '-f',
        file('all-bad.json', [flat('a', { prompt: 5 }), flat('b', { status: 'X' })]),
      );
      expect(result.code).toBe(1);
      expect(result.err.split('\n')).toEqual([
        'VALIDATION_FAILED (400): legacy import imported nothing: 2 failed (a, b)',
        'failed: a: VALIDATION_FAILED automation definition failed validation: /prompt must be string',
        'failed: b: VALIDATION_FAILED legacy definition b: status "X" is not ACTIVE, PAUSED or DISABLED',
      ]);
      expect(bytes() === fresh, 'an import of nothing wrote to the store').toBe(true);
      // Nothing was stored under the key, so the same definitions, fixed, import.
      expect((await runCli('--store', store, 'apply', '-f', file('fixed.json', [flat('a'), flat('b')]))).code).toBe(0);
    });

    test('a partial import commits what passed, exits 1 and says exactly which definitions failed', async () => {
      const result = await runCli(
        '--store',
        store,
        'apply',
        '-f',
        file('partial.json', [flat('good'), flat('bad1', { prompt: 5 }), flat('bad2', { rrule: 'FREQ=HOURLY' })]),
      );
      expect(result.code).toBe(1);
      expect(result.out).toBe('imported: good; skipped: none; failed: 2 (listed below)');
      const failed = result.err.split('\n');
      expect(failed).toHaveLength(2);
      expect(failed[0]).toBe(
        'failed: bad1: VALIDATION_FAILED automation definition failed validation: /prompt must be string',
      );
      expect(failed[1]).toMatch(/^failed: bad2: CAPABILITY_UNSUPPORTED .*FREQ=HOURLY/);
      expect((await runCli('--store', store, 'list')).out).toMatch(/^automation.*\ngood\s/);
      // Again: the good one is skipped now, so nothing would be imported, and the import is refused whole.
      const again = JSON.parse(
        (await runCli('--store', store, '--json', 'apply', '-f', join(dir, 'partial.json'))).out,
      ) as { error: { details: { skipped: unknown[]; failures: unknown[] } } };
      expect(again.error.details.skipped).toHaveLength(1);
      expect(again.error.details.failures).toHaveLength(2);
    });

    test('a rich definition only its paused revision would refuse leaves no draft behind, and the line names the field', async () => {
      const fresh = bytes();
      const noFamiliar = rich('lonely', {
        binding: { familiarBindingPolicy: 'exact', authority: { approvalPolicyRef: 'policy://charm' } },
      });
      const result = await runCli('--store', store, 'apply', '-f', file('no-familiar.json', noFamiliar));
      expect(result.code).toBe(1);
      expect(result.err).toMatch(
        /^VALIDATION_FAILED \(400\): automation definition failed validation: \/definition\/binding\/familiarId is required$/,
      );
      expect(bytes() === fresh, 'a refused definition left a draft').toBe(true);
      const wrongPrompt = await runCli(
        '--store',
        store,
        'apply',
        '-f',
        file('wrong-prompt.json', rich('typo', { action: { variant: 'familiarInvocation', version: 1, prompt: 5 } })),
      );
      expect(wrongPrompt.err).toBe(
        'VALIDATION_FAILED (400): automation definition failed validation: /definition/action/prompt must be string',
      );
      expect((await runCli('--store', store, 'apply', '-f', file('ok.json', rich('fine')))).code).toBe(0);
    });
  },
);

test('the human error line lists the first few failed fields, then how many more', () => {
  const problems = Array.from({ length: PROBLEMS_SHOWN + 3 }, (_, i) => `/field${i}: must be string`);
  const line = errorLine({
    code: 'VALIDATION_FAILED',
    httpStatus: 400,
    message: 'automation definition failed validation',
    details: { field: 'payload.definition', problems },
  });
  expect(line).toBe(
    `VALIDATION_FAILED (400): automation definition failed validation: ${problems
      .slice(0, PROBLEMS_SHOWN)
      .map((p) => `/definition${p.replace(':', '')}`)
      .join('; ')}; and 3 more`,
  );
  // A message that already quotes its problems (the envelope's own) says them once, as sentences.
  expect(
    errorLine({
      code: 'VALIDATION_FAILED',
      httpStatus: 400,
      message: "command envelope is invalid: (root): must have required property 'intent'",
      details: { problems: ["(root): must have required property 'intent'"] },
    }),
  ).toBe('VALIDATION_FAILED (400): command envelope is invalid: /intent is required');
});
