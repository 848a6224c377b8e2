import { expect, test } from 'vitest';
import { runSelfCheck, BROKEN_VARIANTS } from '../../src/testkit/invariants/self-check.js';
import { CONTRACT_INVARIANT_IDS } from '../../src/testkit/invariants/checks.js';
import { PLANTED_SPEC_EDITS } from '../../src/testkit/invariants/planted-spec-edits.js';

test('the suite bites: every deliberately broken variant is caught by the invariant it violates, by name', async () => {
  const rows = await runSelfCheck();
  for (const row of rows)
    console.info(
      `${row.status.padEnd(6)} ${row.expected.padEnd(30)} caught by [${row.caughtBy.join(', ')}]  ${row.property === undefined ? '' : `[${row.property}] `}${row.variant}`,
    );
  expect(rows.filter((r) => r.status === 'missed')).toEqual([]);
  expect(rows.length).toBe(BROKEN_VARIANTS.length + PLANTED_SPEC_EDITS.length);
  // A planted spec edit is caught only when the structural property it names fails.
  expect(rows.filter((r) => r.property !== undefined).map((r) => r.property)).toEqual(
    PLANTED_SPEC_EDITS.map((p) => p.property),
  );
  // Every one of the ten contract invariants has a broken variant that it alone must catch.
  expect(new Set(BROKEN_VARIANTS.map((v) => v.invariant))).toEqual(
    new Set([
      ...CONTRACT_INVARIANT_IDS,
      'no-duplicate-dispatch-per-fence',
      'compaction-behind-snapshot',
      'one-live-run-per-automation',
    ]),
  );
}, 60_000);
