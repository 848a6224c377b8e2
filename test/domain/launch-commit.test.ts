import { describe, expect, test } from 'vitest';
import { commitLaunching, reportLaunch } from '../../src/domain/launch-commit.js';
import type { LaunchOutcome, QueuedLaunch } from '../../src/domain/launch-outcome.js';
import type { StepContext } from '../../src/domain/lifecycle.js';
import { DefinitionIntegrityError } from '../../src/domain/launch-outcome.js';

/** A queued launch that records what became of it. */
function launch(name: string, fate: string[]): QueuedLaunch {
  const outcome: LaunchOutcome = { outboxId: name, result: { outcome: 'skipped', detail: name } };
  return {
    release: () => {
      fate.push(`released ${name}`);
      return Promise.resolve(outcome);
    },
    abandon: () => void fate.push(`abandoned ${name}`),
  };
}

/**
 * Runs a step as a store does: the body (again when `retries` says so, as after a lost race), then the commit,
 * then the after-commit hooks; `failAt` makes the commit or a hook after it throw.
 */
function runner(options: { retries?: number; failAt?: 'commit' | 'after-commit' } = {}) {
  return {
    async step<R>(body: (step: StepContext) => Promise<R>): Promise<R> {
      let attempts = (options.retries ?? 0) + 1;
      for (;;) {
        const step = { afterCommit: [] as Array<() => void> } as unknown as StepContext;
        const value = await body(step);
        if (--attempts > 0) continue;
        if (options.failAt === 'commit') throw new Error('commit failed');
        for (const hook of step.afterCommit!) hook();
        if (options.failAt === 'after-commit') throw new Error('a hook after the commit failed');
        return value;
      }
    },
  };
}

describe('a step that queues a launch settles it by whether its commit stood', () => {
  test("committed: the launch is the caller's to release, and nothing was abandoned", async () => {
    const fate: string[] = [];
    const done = await commitLaunching(runner(), () => Promise.resolve({ value: 7, queued: launch('a', fate) }));
    expect(done.value).toBe(7);
    expect(fate).toEqual([]);
    await done.queued?.release();
    expect(fate).toEqual(['released a']);
  });

  test('a body run again forgets the launch its earlier run queued', async () => {
    const fate: string[] = [];
    let run = 0;
    const done = await commitLaunching(runner({ retries: 1 }), () =>
      Promise.resolve({ value: run, queued: launch(`run ${++run}`, fate) }),
    );
    expect(fate).toEqual(['abandoned run 1']);
    expect(done.queued).toBeDefined();
    await done.queued!.release();
    expect(fate).toEqual(['abandoned run 1', 'released run 2']);
  });

  test('not committed: the launch is abandoned and the failure reaches the caller', async () => {
    const fate: string[] = [];
    await expect(
      commitLaunching(runner({ failAt: 'commit' }), () => Promise.resolve({ value: 1, queued: launch('a', fate) })),
    ).rejects.toThrow('commit failed');
    expect(fate).toEqual(['abandoned a']);
  });

  test('a body run again whose commit then fails: each run forgets its own launch, once', async () => {
    const fate: string[] = [];
    let run = 0;
    await expect(
      commitLaunching(runner({ retries: 1, failAt: 'commit' }), () =>
        Promise.resolve({ value: run, queued: launch(`run ${++run}`, fate) }),
      ),
    ).rejects.toThrow('commit failed');
    expect(fate).toEqual(['abandoned run 1', 'abandoned run 2']);
  });

  test('not committed, with a fallback: the caller gets what the fallback answers instead', async () => {
    const fate: string[] = [];
    const done = await commitLaunching(
      runner({ failAt: 'commit' }),
      () => Promise.resolve({ value: 'carried', queued: launch('a', fate) }),
      () => Promise.resolve({ value: 'planned only', queued: undefined }),
    );
    expect(done).toEqual({ value: 'planned only', queued: undefined });
    expect(fate).toEqual(['abandoned a']);
  });

  test('committed, then failed: the launch is sent before the failure is reported, no fallback', async () => {
    const fate: string[] = [];
    let fellBack = false;
    await expect(
      commitLaunching(
        runner({ failAt: 'after-commit' }),
        () => Promise.resolve({ value: 1, queued: launch('a', fate) }),
        () => {
          fellBack = true;
          return Promise.resolve({ value: 0, queued: undefined });
        },
      ),
    ).rejects.toThrow('a hook after the commit failed');
    expect(fate).toEqual(['released a']);
    expect(fellBack).toBe(false);
  });
});

describe('a released launch is reported as the dispatch phase reports it', () => {
  test('its outcome is kept; an engine refusal is also an error', async () => {
    const outcomes: LaunchOutcome[] = [];
    const errors: Error[] = [];
    const refusal = new DefinitionIntegrityError('a', 2, { computed: 'x', carried: 'y', pinned: 'y' });
    const refused: LaunchOutcome = {
      outboxId: 'o',
      result: { outcome: 'skipped', detail: 'refused' },
      error: refusal,
    };
    await reportLaunch('occurrence o', () => Promise.resolve(refused), outcomes, errors);
    await reportLaunch('occurrence p', () => Promise.resolve(undefined), outcomes, errors);
    expect(outcomes).toEqual([refused]);
    expect(errors).toEqual([refusal]);
  });

  test('a release that throws is an error naming what was released, with the cause kept', async () => {
    const outcomes: LaunchOutcome[] = [];
    const errors: Error[] = [];
    const cause = new Error('runtime unreachable');
    await reportLaunch('launch outbox-1', () => Promise.reject(cause), outcomes, errors);
    expect(outcomes).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toBe('dispatcher: launch outbox-1: runtime unreachable');
    expect(errors[0]!.cause).toBe(cause);
  });
});
