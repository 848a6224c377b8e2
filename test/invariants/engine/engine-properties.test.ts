import { describe, expect, test } from 'vitest';
import {
  RETENTION_PROPERTY,
  runEngineProperty,
  runInterleavingProperty,
} from '../../../src/testkit/invariants/suite.js';
import { CONTRACT_INVARIANT_IDS, INVARIANTS } from '../../../src/testkit/invariants/checks.js';
import { propertySeed } from '../../support/property.js';
import { COMPACTIONS } from '../../../src/testkit/invariants/world.js';

/** CI sizes: enough runs to meet every command kind; `npm run invariants -- --runs N` scales up. */
const RUNS = Number(process.env.FC_RUNS ?? 40);

describe('engine-level invariants: random command sequences, all invariants after every step', () => {
  test.each(['memory', 'json', 'sqlite'] as const)(
    'on the %s store',
    async (store) => {
      const seed = propertySeed(`engine invariants (${store} store)`);
      const checked = new Map<string, number>();
      const failure = await runEngineProperty(store, { runs: RUNS, seed }, checked);
      expect(
        failure,
        failure === undefined
          ? ''
          : `${failure.invariants.join(', ')}: ${failure.problems.join('; ')}\n${failure.counterexample}\nseed ${failure.seed} path ${failure.path}`,
      ).toBeUndefined();
      for (const invariant of INVARIANTS) expect(checked.get(invariant.id), invariant.id).toBeGreaterThan(RUNS);
    },
    120_000,
  );

  test.each(['memory', 'sqlite'] as const)(
    'with retention compacting settled history behind snapshots (%s store)',
    async (store) => {
      const seed = propertySeed(`engine invariants with retention (${store} store)`);
      const checked = new Map<string, number>();
      const failure = await runEngineProperty(store, { seed, ...RETENTION_PROPERTY(RUNS) }, checked);
      expect(
        failure,
        failure === undefined
          ? ''
          : `${failure.invariants.join(', ')}: ${failure.problems.join('; ')}\n${failure.counterexample}\nseed ${failure.seed} path ${failure.path}`,
      ).toBeUndefined();
      console.log(
        `[property] retention (${store}): ${checked.get(COMPACTIONS) ?? 0} occurrences compacted over ${RUNS * 2} runs`,
      );
      expect(checked.get(COMPACTIONS) ?? 0).toBeGreaterThan(0);
    },
    120_000,
  );

  test('two engines and operator commands in every interleaving fast-check picks', async () => {
    const seed = propertySeed('engine invariants (interleavings)');
    const checked = new Map<string, number>();
    const failure = await runInterleavingProperty({ runs: RUNS, seed }, checked);
    expect(
      failure,
      failure === undefined
        ? ''
        : `${failure.invariants.join(', ')}: ${failure.problems.join('; ')}\n${failure.counterexample}`,
    ).toBeUndefined();
  }, 120_000);

  test('all ten contract invariants are checked', () => {
    expect(CONTRACT_INVARIANT_IDS).toHaveLength(10);
  });
});
