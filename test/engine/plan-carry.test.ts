import { describe, expect, test } from 'vitest';
import { concurrencyGate } from '../../src/domain/concurrency.js';
import type { CommittedTransition } from '../../src/domain/inspection.js';
import { Engine } from '../../src/engine/engine.js';
import { ENGINE_PARTS, type EngineParts } from '../../src/engine/parts.js';
import type { LaunchRequest } from '../../src/runtime/runtime.js';
import { command, definitionBody } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';

const NINE = '2026-03-02T09:00:00.000Z';

/** An engine over the harness's store with `parts`, each commit's transitions recorded as one batch. */
function engineWith(h: Harness, parts: EngineParts, passConcurrency?: number) {
  const engine = new Engine(
    {
      store: h.store,
      clock: h.clock,
      runtimes: [h.runtime],
      instanceId: 'engine-a',
      ...(passConcurrency === undefined ? {} : { passConcurrency }),
    },
    parts,
  );
  const commits: string[][] = [];
  engine.services.observer = (transitions: CommittedTransition[]) =>
    commits.push(transitions.map((t) => `${t.entity} ${t.from}->${t.to}`));
  return { engine, commits };
}

/** The production parts with a dispatcher whose acceptance throws while `failing()` says so. */
function failingQueue(failing: () => boolean): EngineParts {
  return {
    ...ENGINE_PARTS,
    queueLaunch: (svc, step, occurrenceId) => {
      if (failing()) throw new Error('the dispatcher refused for this test');
      return ENGINE_PARTS.queueLaunch(svc, step, occurrenceId);
    },
  };
}

describe('planning carries a due slot to its launch in one commit', () => {
  test('planned, claimed, its run accepted and its attempt dispatching in one commit, then the runtime is called', async () => {
    const h = await harness({ start: NINE });
    const { engine, commits } = engineWith(h, ENGINE_PARTS);
    let commitsAtLaunch = -1;
    const launch = h.runtime.launch.bind(h.runtime);
    h.runtime.launch = (request: LaunchRequest, now: Date) => {
      commitsAtLaunch = commits.length;
      return launch(request, now);
    };
    const report = await engine.tick();
    expect(report).toMatchObject({ planned: 1, launched: 1, errors: [] });
    expect(commits[0]).toEqual([
      'occurrence none->planned',
      'occurrence planned->eligible',
      'occurrence eligible->claimed',
      'run none->accepted',
      'attempt none->adopted',
      'attempt adopted->dispatching',
      'run accepted->running',
    ]);
    // Adoption before side effects: the runtime is called only after that commit.
    expect(commitsAtLaunch).toBe(1);
    expect(commits[1]).toEqual([
      'attempt dispatching->started',
      'attempt started->observing',
      'occurrence claimed->dispatching',
      'occurrence dispatching->running',
    ]);
    expect(await h.read.occurrences()).toMatchObject([{ state: 'running' }]);
    expect(h.runtime.launches).toHaveLength(1);
  });

  test('a carry that fails commits the plan alone; the same pass claims and dispatches it in its later phases', async () => {
    const h = await harness({ start: NINE });
    let calls = 0;
    const { engine, commits } = engineWith(
      h,
      failingQueue(() => ++calls === 1),
    );
    const report = await engine.tick();
    expect(report).toMatchObject({ planned: 1, launched: 1, errors: [] });
    expect(commits[0]).toEqual(['occurrence none->planned']);
    expect(commits[1]).toEqual(['occurrence planned->eligible', 'occurrence eligible->claimed']);
    expect(h.runtime.launches).toHaveLength(1);
    expect(await h.read.occurrences()).toMatchObject([{ state: 'running' }]);
    expect(await h.read.runs()).toHaveLength(1);
  });

  test('a dispatcher that keeps failing never costs the slot its plan: the dispatch phase reports the failure', async () => {
    const h = await harness({ start: NINE });
    const { engine } = engineWith(
      h,
      failingQueue(() => true),
    );
    const report = await engine.tick();
    expect(report.planned).toBe(1);
    expect(report.launched).toBe(0);
    expect(report.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^dispatcher: occurrence .*: the dispatcher refused for this test$/),
    ]);
    expect(await h.read.occurrences()).toMatchObject([{ state: 'claimed' }]);
    expect(h.runtime.launches).toHaveLength(0);
  });

  test('a slot whose automation still has work past its deadline is not skipped: the pass settles that work first', async () => {
    const h = await harness({ start: NINE, rrule: 'FREQ=DAILY;BYHOUR=9,10' });
    h.runtime.enqueue('hang');
    await h.engine.tick();
    expect(await h.read.occurrences()).toMatchObject([{ state: 'running' }]);
    // 10:00: the 09:00 run is past its 30-minute deadline but not yet settled when the 10:00 slot is planned.
    h.clock.set('2026-03-02T10:00:00.000Z');
    const report = await h.engine.tick();
    expect(report.errors).toEqual([]);
    const states = (await h.read.occurrences()).map((o) => [o.scheduledFor, o.state]);
    expect(states).toEqual([
      ['2026-03-02T09:00:00.000Z', 'timed_out'],
      ['2026-03-02T10:00:00.000Z', 'running'],
    ]);
  });

  test('a slot whose automation has work running within its deadline is skipped (overlap forbid), as before', async () => {
    const h = await harness({ start: NINE, rrule: 'FREQ=DAILY;BYHOUR=9,10', perRunMinutes: 120 });
    h.runtime.enqueue('hang');
    await h.engine.tick();
    h.clock.set('2026-03-02T10:00:00.000Z');
    await h.engine.tick();
    expect(await h.read.occurrences()).toMatchObject([
      { scheduledFor: '2026-03-02T09:00:00.000Z', state: 'running' },
      { scheduledFor: '2026-03-02T10:00:00.000Z', state: 'skipped', misfireDisposition: 'skipped_overlap' },
    ]);
  });

  test('launches sent by planning are bounded by the pass concurrency', async () => {
    const h = await harness({ start: '2026-03-02T08:00:00.000Z' });
    for (const id of ['a', 'b', 'c', 'd', 'e']) {
      const body = (revision: number, lifecycleState: 'draft' | 'paused') => ({
        definition: definitionBody(id, { revision, lifecycleState, rrule: 'FREQ=DAILY;BYHOUR=9' }),
      });
      await h.ok(command('definition.create.v1', body(1, 'draft')));
      await h.ok(command('definition.revise.v1', body(2, 'paused'), { expectedRevision: 1 }));
      await h.ok(command('definition.activate.v1', { automationId: id }, { expectedRevision: 2 }));
    }
    h.clock.set(NINE);
    const { engine } = engineWith(h, ENGINE_PARTS, 2);
    let inFlight = 0;
    let most = 0;
    const launch = h.runtime.launch.bind(h.runtime);
    h.runtime.launch = async (request: LaunchRequest, now: Date) => {
      most = Math.max(most, ++inFlight);
      // Several turns of the event loop: any launch not held back by the gate would start meanwhile.
      for (let turn = 0; turn < 5; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
      inFlight--;
      return launch(request, now);
    };
    const report = await engine.tick();
    expect(report).toMatchObject({ planned: 6, launched: 6, errors: [] });
    expect(most).toBe(2);
  });
});

describe('concurrencyGate', () => {
  test('runs at most its limit at once, the waiting ones in the order they came', async () => {
    const gate = concurrencyGate(2);
    const started: number[] = [];
    const finish = new Map<number, () => void>();
    const runs = [0, 1, 2, 3, 4].map((n) =>
      gate(
        () =>
          new Promise<number>((resolve) => {
            started.push(n);
            finish.set(n, () => resolve(n));
          }),
      ),
    );
    const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
    await settle();
    expect(started).toEqual([0, 1]);
    finish.get(1)!();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    finish.get(0)!();
    finish.get(2)!();
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    finish.get(3)!();
    finish.get(4)!();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4]);
  });

  test('a call that throws gives its place to the next', async () => {
    const gate = concurrencyGate(1);
    const failed = gate(() => Promise.reject(new Error('no')));
    const next = gate(() => Promise.resolve('yes'));
    await expect(failed).rejects.toThrow('no');
    expect(await next).toBe('yes');
  });
});
