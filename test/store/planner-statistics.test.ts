import { describe, expect, test } from 'vitest';
import {
  MAX_ROWS_FOR_ANALYZE,
  MIN_CHANGES_BEFORE_ANALYZE,
  PlannerStatistics,
} from '../../src/store/postgres/planner-statistics.js';

/** Planner statistics whose commands are recorded and answered when the test says. */
function harness(rowsAtOpen: number, rowsAfter: () => number) {
  const commands: string[] = [];
  const answers: Array<{ done: () => void; fail: (error: Error) => void }> = [];
  const statistics = new PlannerStatistics(
    (sql) => {
      commands.push(sql);
      return new Promise<void>((done, fail) => answers.push({ done, fail }));
    },
    [
      { name: '"s".records', columns: ['kind', 'id'] },
      { name: '"s".log', columns: ['stream'] },
    ],
    async () => rowsAfter(),
    rowsAtOpen,
  );
  /** Answers the oldest command and lets the statistics take its new threshold. */
  const finish = async (error?: Error) => {
    const answer = answers.shift()!;
    if (error === undefined) answer.done();
    else answer.fail(error);
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  };
  return { statistics, commands, finish };
}

describe('a young store analyzes its tables as its own writes grow them', () => {
  test('nothing runs below the first threshold; one command for both tables at it', () => {
    const { statistics, commands } = harness(0, () => 0);
    statistics.changed(MIN_CHANGES_BEFORE_ANALYZE - 1);
    expect(commands).toEqual([]);
    statistics.changed(1);
    expect(commands).toEqual([
      'BEGIN; SET LOCAL default_statistics_target = 10; ANALYZE (SKIP_LOCKED) "s".records (kind, id), "s".log (stream); COMMIT',
    ]);
  });

  test('one run at a time; the next threshold is the tables’ size after the run', async () => {
    const { statistics, commands, finish } = harness(0, () => 5_000);
    statistics.changed(MIN_CHANGES_BEFORE_ANALYZE);
    // Changes made while a run is under way count toward the next.
    statistics.changed(3_000);
    expect(commands).toHaveLength(1);
    await finish();
    statistics.changed(1_999);
    expect(commands).toHaveLength(1);
    statistics.changed(1);
    expect(commands).toHaveLength(2);
  });

  test('a store that opens on large tables leaves them to autovacuum', () => {
    const { statistics, commands } = harness(MAX_ROWS_FOR_ANALYZE + 1, () => 0);
    statistics.changed(10 * MAX_ROWS_FOR_ANALYZE);
    expect(commands).toEqual([]);
  });

  test('tables that outgrow the limit are left to autovacuum from then on', async () => {
    const { statistics, commands, finish } = harness(0, () => MAX_ROWS_FOR_ANALYZE + 1);
    statistics.changed(MIN_CHANGES_BEFORE_ANALYZE);
    await finish();
    statistics.changed(10 * MAX_ROWS_FOR_ANALYZE);
    expect(commands).toHaveLength(1);
  });

  test('a failed run is not raised and is tried again at the next threshold', async () => {
    const { statistics, commands, finish } = harness(2_000, () => 0);
    statistics.changed(2_000);
    await finish(new Error('connection lost'));
    statistics.changed(1_999);
    expect(commands).toHaveLength(1);
    statistics.changed(1);
    expect(commands).toHaveLength(2);
  });

  test('close waits for a run under way and starts no more', async () => {
    const { statistics, commands, finish } = harness(0, () => 0);
    statistics.changed(MIN_CHANGES_BEFORE_ANALYZE);
    let closed = false;
    const closing = statistics.close().then(() => (closed = true));
    await Promise.resolve();
    expect(closed).toBe(false);
    await finish();
    await closing;
    statistics.changed(10 * MIN_CHANGES_BEFORE_ANALYZE);
    expect(commands).toHaveLength(1);
  });
});
