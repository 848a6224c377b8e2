import { attemptMachine, definitionMachine, occurrenceMachine, runMachine } from '../../machines/index.js';
import { PersistentActor } from '../actors/persistent-actor.js';
import { isContractError } from '../contract/errors.js';
import { JsonFileStore } from '../store/json/index.js';
import { removeFileStore } from '../store/open-store.js';

/** Minutes after a fixed start instant: the walkthrough runs on a simulated clock, never the wall clock. */
const at = (minutes: number) => new Date(Date.UTC(2026, 2, 2, 9, 0, 0) + minutes * 60_000).toISOString();

type Store = JsonFileStore;
type Print = (...lines: string[]) => void;
interface Ids {
  automationId: string;
  occurrenceId: string;
  runId: string;
  attemptId: string;
}

/** The definition, revised and activated by the command handler. */
async function activeDefinition(store: Store, { automationId }: Ids) {
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
  return definition;
}

/** The occurrence, due and claimed by the scheduler. */
async function claimedOccurrence(store: Store, { automationId, occurrenceId }: Ids) {
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
  return occurrence;
}

/** The run and its first attempt, as the dispatcher creates them. */
async function runAndAttempt(store: Store, { automationId, occurrenceId, runId, attemptId }: Ids) {
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
  return { run, attempt };
}

type Occurrence = Awaited<ReturnType<typeof claimedOccurrence>>;
type Run = Awaited<ReturnType<typeof runAndAttempt>>['run'];
type Attempt = Awaited<ReturnType<typeof runAndAttempt>>['attempt'];

/** Adoption, dispatch and session start across the three execution machines, then evidence opening. */
async function startAttempt(
  occurrence: Occurrence,
  run: Run,
  attempt: Attempt,
  { runId, attemptId }: Ids,
): Promise<void> {
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
}

/** A second session bind on an attempt already observing one is refused by its machine. */
async function showRefusedBind(attempt: Attempt, print: Print): Promise<void> {
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
}

/** Terminal evidence settles the attempt, then the run, then the occurrence. */
async function settle(occurrence: Occurrence, run: Run, attempt: Attempt, { attemptId }: Ids): Promise<void> {
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
}

/** Reopens the store and prints the committed transitions and every entity restored from them. */
async function printReopened(file: string, print: Print): Promise<void> {
  const reopened = await JsonFileStore.open(file);
  try {
    print('', `reopened ${file}; every transition as committed:`);
    for (const entry of await reopened.read((r) =>
      r.readFeed<{ from: string; to: string; on: string; actor: string; at: string }>(),
    )) {
      const { from, to, on, actor } = entry.data;
      print(
        `  #${String(entry.position).padStart(2)} ${entry.stream.padEnd(48)} ${from} -> ${to}  (${on} by ${actor})`,
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
        const sealed = record.terminal ? '  (terminal, sealed)' : '';
        print(`  ${kind.padEnd(10)} ${record.id.padEnd(44)} ${actor.state.padEnd(10)} v${actor.version}${sealed}`);
        actor.stop();
      }
    }
  } finally {
    await reopened.close();
  }
}

/**
 * Drives one automation through the four machines on a fresh JSON store: definition draft → active,
 * one occurrence claimed, dispatched and settled with its run and attempt, then a refused event, then a
 * reopen of the store to show every entity restored as committed.
 */
export async function runLifecycleWalkthrough(file: string, print: Print): Promise<void> {
  removeFileStore(file);
  const store = await JsonFileStore.open(file);
  const automationId = 'nightly-report';
  const occurrenceId = `${automationId}-${Date.parse(at(0))}`;
  const runId = `run-${occurrenceId}`;
  const ids: Ids = { automationId, occurrenceId, runId, attemptId: `attempt-${runId}-1` };
  try {
    const definition = await activeDefinition(store, ids);
    const occurrence = await claimedOccurrence(store, ids);
    const { run, attempt } = await runAndAttempt(store, ids);
    await startAttempt(occurrence, run, attempt, ids);
    await showRefusedBind(attempt, print);
    await settle(occurrence, run, attempt, ids);
    for (const actor of [definition, occurrence, run, attempt]) actor.stop();
  } finally {
    await store.close();
  }
  await printReopened(file, print);
}
