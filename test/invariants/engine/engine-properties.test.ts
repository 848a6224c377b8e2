import { describe, expect, test } from 'vitest';
import {
  RETENTION_PROPERTY,
  runEngineProperty,
  runInterleavingProperty,
  type EngineFailure,
} from '../../../src/testkit/invariants/suite.js';
import { CONTRACT_INVARIANT_IDS, INVARIANTS } from '../../../src/testkit/invariants/checks.js';
import { propertySeed } from '../../support/property.js';
import { COMPACTIONS, CONTENDED, POSTGRES_WORLD_ENGINES } from '../../../src/testkit/invariants/world.js';
import { databaseUrl, describePostgres } from '../../support/postgres.js';

/** What a failed property found, with its shrunk counterexample and how to replay it. */
const described = (failure: EngineFailure | undefined): string =>
  failure === undefined
    ? ''
    : `${failure.invariants.join(', ')}: ${failure.problems.join('; ')}\n${failure.counterexample}\nseed ${failure.seed} path ${failure.path}`;

/** CI sizes: enough runs to meet every command kind; `npm run invariants -- --runs N` scales up. */
const RUNS = Number(process.env.FC_RUNS ?? 40);

describe('engine-level invariants: random command sequences, all invariants after every step', () => {
  test.each(['memory', 'json', 'sqlite'] as const)(
    'on the %s store',
    async (store) => {
      const seed = propertySeed(`engine invariants (${store} store)`);
      const checked = new Map<string, number>();
      const failure = await runEngineProperty(store, { runs: RUNS, seed }, checked);
      expect(failure, described(failure)).toBeUndefined();
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
      expect(failure, described(failure)).toBeUndefined();
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

/** PostgreSQL runs are slower (every pass is real transactions over sockets): fewer of them in CI. */
const POSTGRES_RUNS = Number(process.env.FC_POSTGRES_RUNS ?? 12);

describePostgres('engine-level invariants on PostgreSQL', (socketDir) => {
  test(`${POSTGRES_WORLD_ENGINES} engines, each on its own store over one database, passes alone and all at once`, async () => {
    const seed = propertySeed('engine invariants (postgres store)');
    const checked = new Map<string, number>();
    const postgresUrl = databaseUrl(socketDir, 'postgres');
    const failure = await runEngineProperty('postgres', { runs: POSTGRES_RUNS, seed, postgresUrl }, checked);
    expect(failure, described(failure)).toBeUndefined();
    console.log(
      `[property] postgres: ${checked.get(CONTENDED) ?? 0} steps lost a race to another engine over ${POSTGRES_RUNS} runs`,
    );
    for (const invariant of INVARIANTS) expect(checked.get(invariant.id), invariant.id).toBeGreaterThan(POSTGRES_RUNS);
  }, 300_000);
});
