import { describe, expect, test } from 'vitest';
import { MAX_ROWS_FOR_UPKEEP, MIN_CHANGES_BEFORE_UPKEEP, TableUpkeep } from '../../src/store/postgres/table-upkeep.js';

/** An upkeep whose commands are recorded and answered when the test says. */
function harness(rowsAtOpen: number, rowsAfter: () => number) {
  const commands: string[] = [];
  const answers: Array<{ done: () => void; fail: (error: Error) => void }> = [];
  const upkeep = new TableUpkeep(
    (sql) => {
      commands.push(sql);
      return new Promise<void>((done, fail) => answers.push({ done, fail }));
    },
    ['"s".records', '"s".log'],
    async () => rowsAfter(),
    rowsAtOpen,
  );
  /** Answers the oldest command and lets the upkeep take its new threshold. */
  const finish = async (error?: Error) => {
    const answer = answers.shift()!;
    if (error === undefined) answer.done();
    else answer.fail(error);
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  };
  return { upkeep, commands, finish };
}

describe('a young store vacuums and analyzes its tables as its own writes grow them', () => {
  test('nothing runs below the first threshold; one command for both tables at it', () => {
    const { upkeep, commands } = harness(0, () => 0);
    upkeep.changed(MIN_CHANGES_BEFORE_UPKEEP - 1);
    expect(commands).toEqual([]);
    upkeep.changed(1);
    expect(commands).toEqual(['VACUUM (ANALYZE, SKIP_LOCKED) "s".records, "s".log']);
  });

  test('one run at a time; the next threshold is the tables’ size after the run', async () => {
    const { upkeep, commands, finish } = harness(0, () => 5_000);
    upkeep.changed(MIN_CHANGES_BEFORE_UPKEEP);
    // Changes made while a run is under way count toward the next.
    upkeep.changed(3_000);
    expect(commands).toHaveLength(1);
    await finish();
    upkeep.changed(1_999);
    expect(commands).toHaveLength(1);
    upkeep.changed(1);
    expect(commands).toHaveLength(2);
  });

  test('a store that opens on large tables leaves them to autovacuum', () => {
    const { upkeep, commands } = harness(MAX_ROWS_FOR_UPKEEP + 1, () => 0);
    upkeep.changed(10 * MAX_ROWS_FOR_UPKEEP);
    expect(commands).toEqual([]);
  });

  test('tables that outgrow the limit are left to autovacuum from then on', async () => {
    const { upkeep, commands, finish } = harness(0, () => MAX_ROWS_FOR_UPKEEP + 1);
    upkeep.changed(MIN_CHANGES_BEFORE_UPKEEP);
    await finish();
    upkeep.changed(10 * MAX_ROWS_FOR_UPKEEP);
    expect(commands).toHaveLength(1);
  });

  test('a failed run is not raised and is tried again at the next threshold', async () => {
    const { upkeep, commands, finish } = harness(2_000, () => 0);
    upkeep.changed(2_000);
    await finish(new Error('connection lost'));
    upkeep.changed(1_999);
    expect(commands).toHaveLength(1);
    upkeep.changed(1);
    expect(commands).toHaveLength(2);
  });

  test('close waits for a run under way and starts no more', async () => {
    const { upkeep, commands, finish } = harness(0, () => 0);
    upkeep.changed(MIN_CHANGES_BEFORE_UPKEEP);
    let closed = false;
    const closing = upkeep.close().then(() => (closed = true));
    await Promise.resolve();
    expect(closed).toBe(false);
    await finish();
    await closing;
    upkeep.changed(10 * MIN_CHANGES_BEFORE_UPKEEP);
    expect(commands).toHaveLength(1);
  });
});
