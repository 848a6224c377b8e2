import { rmSync } from 'node:fs';
import { attemptMachine, definitionMachine, occurrenceMachine, runMachine } from '../../machines/index.js';
import { PersistentActor } from '../actors/persistent-actor.js';
import { isContractError } from '../contract/errors.js';
import { JsonFileStore } from '../store/json/index.js';

/** Minutes after a fixed start instant: the walkthrough runs on a simulated clock, never the wall clock. */
const at = (minutes: number) => new Date(Date.UTC(2026, 2, 2, 9, 0, 0) + minutes * 60_000).toISOString();

/**
 * Drives one automation through the four machines on a fresh JSON store: definition draft → active,
 * one occurrence claimed, dispatched and settled with its run and attempt, then a refused event, then a
 * reopen of the store to show every entity restored as committed.
 */
export async function runLifecycleWalkthrough(file: string, print: (...lines: string[]) => void): Promise<void> {
  rmSync(file, { force: true });
  const store = await JsonFileStore.open(file);
  const automationId = 'nightly-report';
  const occurrenceId = `${automationId}-${Date.parse(at(0))}`;
  try {
    const definition = await PersistentActor.create(
      definitionMachine,
      { store, kind: 'definition', id: automationId },
      { automationId, revision: 1 },
    );
    await definition.send({
      type: 'definition_revise_committed',
      actor: 'command_handler',
      now: at(-60),
      revision: 2,
      validation: { valid: true, problems: [] },
    });
    await definition.send({
      type: 'definition_activated',
      actor: 'command_handler',
      now: at(-59),
      revision: 3,
      requirements: { familiar: true, authority: true, runtime: true },
    });

    const occurrence = await PersistentActor.create(
      occurrenceMachine,
      { store, kind: 'occurrence', id: occurrenceId },
      {
        occurrenceId,
        automationId,
        automationRevision: 3,
        definitionDigest: '0'.repeat(64),
        scheduledFor: at(0),
        retryPolicy: {
          maxAttempts: 3,
          backoffPolicy: 'exponential',
          backoffSeconds: 30,
          retryableClasses: ['runtime_unavailable', 'transient_dispatch'],
        },
        perRunMinutes: 30,
      },
    );
    await occurrence.send({ type: 'eligibility_passed', actor: 'scheduler', now: at(0) });
    await occurrence.send({
      type: 'claim',
      actor: 'scheduler',
      now: at(0),
      expectedGeneration: 0,
      claimedBy: 'walkthrough',
      leaseExpiresAt: at(60),
    });
    const runId = `run-${occurrenceId}`;
    const attemptId = `attempt-${runId}-1`;
    const run = await PersistentActor.create(
      runMachine,
      { store, kind: 'run', id: runId },
      {
        runId,
        occurrenceId,
        automationId,
        automationRevision: 3,
        fenceGeneration: 1,
        deadlineAt: at(30),
      },
    );
    const attempt = await PersistentActor.create(
      attemptMachine,
      { store, kind: 'attempt', id: attemptId },
      {
        attemptId,
        runId,
        occurrenceId,
        attemptNumber: 1,
        adoptionKey: `automation:${runId}:1`,
        fenceGeneration: 1,
        leaseExpiresAt: at(60),
        deadlineAt: at(30),
      },
    );
    await occurrence.send({
      type: 'attempt_adopted',
      actor: 'dispatcher',
      now: at(0),
      attemptId,
      attemptNumber: 1,
      adoptionKey: `automation:${runId}:1`,
      fenceGeneration: 1,
    });
    await attempt.send({
      type: 'dispatch',
      actor: 'dispatcher',
      now: at(1),
      dispatchGeneration: 1,
      fenceGeneration: 1,
    });
    await attempt.send({
      type: 'runtime_started',
      actor: 'dispatcher',
      now: at(1),
      sessionId: 'session-1',
      dispatchGeneration: 1,
    });
    await run.send({
      type: 'attempt_started',
      actor: 'dispatcher',
      now: at(1),
      attemptId,
      attemptNumber: 1,
      adoptionCommittedAt: at(0),
      launchIssuedAt: at(1),
    });
    await occurrence.send({
      type: 'runtime_started',
      actor: 'dispatcher',
      now: at(1),
      attemptId,
      sessionId: 'session-1',
    });
    await attempt.send({
      type: 'evidence_stream_open',
      actor: 'worker',
      now: at(2),
      sessionId: 'session-1',
      cursors: { logCursor: 'log:0' },
    });

    print('a second session bind on the observing attempt:');
    try {
      await attempt.send({
        type: 'runtime_started',
        actor: 'dispatcher',
        now: at(3),
        sessionId: 'session-2',
        dispatchGeneration: 1,
      });
    } catch (error) {
      if (!isContractError(error)) throw error;
      print(`  refused: ${error.code} (${error.httpStatus}) ${error.message}`);
    }

    const evidence = { sessionId: 'session-1', outcome: 'succeeded' as const, exitCode: 0, verified: true };
    await attempt.send({ type: 'run_settled', actor: 'worker', now: at(12), evidence });
    await run.send({
      type: 'attempt_settled',
      actor: 'dispatcher',
      now: at(12),
      attempt: { attemptId, attemptNumber: 1, state: 'succeeded' },
      receiptRef: 'receipt-1',
      furtherAttemptOpens: false,
    });
    await occurrence.send({ type: 'run_settled', actor: 'dispatcher', now: at(12), evidence, receiptRef: 'receipt-1' });
    for (const actor of [definition, occurrence, run, attempt]) actor.stop();
  } finally {
    await store.close();
  }

  const reopened = await JsonFileStore.open(file);
  try {
    print('', `reopened ${file}; every transition as committed:`);
    for (const entry of await reopened.read((r) =>
      r.readFeed<{ from: string; to: string; on: string; actor: string; at: string }>(),
    )) {
      print(
        `  #${String(entry.position).padStart(2)} ${entry.stream.padEnd(48)} ${entry.data.from} -> ${entry.data.to}  (${entry.data.on} by ${entry.data.actor})`,
      );
    }
    print('', 'restored entities:');
    for (const [kind, machine] of [
      ['definition', definitionMachine],
      ['occurrence', occurrenceMachine],
      ['run', runMachine],
      ['attempt', attemptMachine],
    ] as const) {
      for (const record of await reopened.read((r) => r.list(kind))) {
        const actor = await PersistentActor.load(machine, { store: reopened, kind, id: record.id });
        print(
          `  ${kind.padEnd(10)} ${record.id.padEnd(44)} ${actor.state.padEnd(10)} v${actor.version}${record.terminal ? '  (terminal, sealed)' : ''}`,
        );
        actor.stop();
      }
    }
  } finally {
    await reopened.close();
  }
}
