import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { runLifecycleWalkthrough } from '../../src/cli/lifecycle-walkthrough.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-walkthrough-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('the walkthrough (npm start) commits every transition on a JSON store and restores it', async () => {
  const lines: string[] = [];
  const file = join(dir, 'walkthrough.json');
  await runLifecycleWalkthrough(file, (...l) => lines.push(...l));
  const text = lines.join('\n');
  expect(text).toContain(
    'refused: ILLEGAL_TRANSITION (422) attempt.v1 refuses runtime_started from dispatcher in state observing',
  );
  expect(lines.filter((l) => /^ {2}# ?\d+ /.test(l))).toHaveLength(13);
  expect(text).toMatch(/definition +nightly-report +active +v3/);
  expect(text).toMatch(/occurrence +nightly-report-\d+ +succeeded +v6 +\(terminal, sealed\)/);
  expect(text).toMatch(/attempt +attempt-run-nightly-report-\d+-1 +succeeded/);
  // Running it again starts from a fresh store rather than failing on existing ids.
  await runLifecycleWalkthrough(file, () => undefined);
});
