import {
  ATTEMPT_TERMINAL_STATES,
  AttemptState,
  DefinitionState,
  OCCURRENCE_LIVE_STATES,
  OccurrenceState,
  RunState,
} from '../../machines/index.js';
import { updateEntityAttributes } from '../actors/entity-transition.js';
import { sha256Hex } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import { MAX_ATTEMPTS_PER_RUN } from '../contract/vocabulary.js';
import { createExecutionEntity, liveWorkOf, moveEntity, type StepContext } from '../domain/lifecycle.js';
import {
  KINDS,
  attemptContext,
  occurrenceContext,
  runContext,
  stateOf,
  type AttemptAttributes,
  type OccurrenceAttributes,
  type OccurrenceRecord,
  type RunAttributes,
  type RunRecord,
} from '../domain/records.js';
import { isQuarantined, readDefinitionRecord, type EngineServices } from '../domain/services.js';
import type { AttemptDisposition } from '../guards/occurrence.js';
import type { CommandContext, CommandOutcome, OperatorCommands } from './context.js';
import { definitionHealth, runHistory } from './execution-reads.js';
import { DEFINITION_KIND } from '../domain/definition-records.js';
import { type LaunchOutcome } from '../domain/launch-outcome.js';
import { occurrenceInput } from '../domain/occurrence-input.js';
import { compactedEntity } from '../changefeed/compacted-stream.js';
import { loadAttempt, loadRun } from '../domain/entities.js';
import { moveOutbox, readAttemptLaunch } from '../domain/outbox.js';
import { moveQuarantine } from '../domain/quarantine.js';
import { endRunHold, isRunHeld, moveRunHold } from '../domain/run-hold.js';
import { OutboxState } from '../../machines/extension-states.js';

const step = (ctx: CommandContext): StepContext => ({
  tx: ctx.tx,
  feed: ctx.feed,
  now: ctx.now,
  adoptionKey: ctx.envelope.adoptionKey,
});
const notFound = (kind: string, id: string) => new ContractError('NOT_FOUND', `no ${kind} with id ${id}`, { kind, id });

/** NOT_FOUND for an occurrence or run, saying so when retention compacted it (it settled long ago). */
async function missing(ctx: CommandContext, kind: 'occurrence' | 'run', id: string): Promise<ContractError> {
  const compacted = await compactedEntity(ctx.tx, { kind, id });
  if (compacted === undefined) return notFound(kind, id);
  const state = (compacted.finalState[kind] as { state?: string } | undefined)?.state ?? 'settled';
  return new ContractError(
    'NOT_FOUND',
    `${kind} ${id} settled (${state}) and was compacted by retention at ${compacted.compactedAt}; its stream keeps the final state`,
    {
      kind,
      id,
      compactedAt: compacted.compactedAt,
      finalState: compacted.finalState,
    },
  );
}

async function getOccurrence(ctx: CommandContext, id: string): Promise<OccurrenceRecord> {
  const r = await ctx.tx.get<OccurrenceRecord['data']>(KINDS.occurrence, id);
  if (r === undefined) throw await missing(ctx, 'occurrence', id);
  return r as OccurrenceRecord;
}

async function getRun(ctx: CommandContext, id: string): Promise<RunRecord> {
  const r = await ctx.tx.get<RunRecord['data']>(KINDS.run, id);
  if (r === undefined) throw await missing(ctx, 'run', id);
  return r as RunRecord;
}

/** occurrence.runNow.v1: a manual occurrence, claimed in the command's own commit, launched right after it. */
async function runNow(
  svc: EngineServices,
  dispatch: (id: string) => Promise<unknown>,
  ctx: CommandContext,
): Promise<CommandOutcome> {
  const automationId = ctx.envelope.payload.automationId as string;
  const definitionRecord = await ctx.tx.get<Awaited<ReturnType<typeof readDefinitionRecord>>['data']>(
    DEFINITION_KIND,
    automationId,
  );
  if (definitionRecord === undefined) throw notFound('definition', automationId);
  const state = definitionRecord.data.snapshot.value;
  if (state === DefinitionState.tombstoned)
    throw new ContractError('GONE_TOMBSTONED', `definition ${automationId} is tombstoned`, { automationId });
  if (state !== DefinitionState.active)
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `definition ${automationId} is ${state}; only an active definition runs`,
      { automationId, state },
    );
  if (await isQuarantined(ctx.tx, automationId)) {
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${automationId} is quarantined after exhausted retries`, {
      automationId,
      quarantined: true,
    });
  }
  const live = await liveWorkOf(ctx.tx, automationId);
  if (live !== undefined)
    throw new ContractError(
      'OVERLAP_FORBIDDEN',
      `automation ${automationId} has live work (${live}); overlap is forbidden`,
      { automationId, occurrenceId: live },
    );
  const definition = definitionRecord.data.attributes.definition;
  const occurrenceId = `occ-manual-${sha256Hex(ctx.envelope.adoptionKey).slice(0, 32)}`;
  const occurrenceKey = `${automationId}@manual-${ctx.envelope.adoptionKey}`.slice(0, 320);
  const s = step(ctx);
  await ctx.tx.put(KINDS.occurrenceKey, occurrenceKey, { occurrenceId }, { expectedVersion: null });
  await createExecutionEntity<OccurrenceAttributes>(
    s,
    'occurrence',
    occurrenceId,
    occurrenceInput(occurrenceId, definition, ctx.now),
    {
      automationId,
      automationRevision: definition.revision,
      definitionDigest: definition.integrity,
      occurrenceKey,
      scheduledFor: ctx.now,
      triggerIdentity: { kind: 'manual.request', requestedBy: ctx.envelope.origin.principal },
      stateReason: 'manual request',
      misfireDisposition: 'none',
      createdAt: ctx.now,
      updatedAt: ctx.now,
      observedAt: ctx.now,
    },
    'manual_request',
  );
  const leaseExpiresAt = await svc.actors.scheduler.claimForManualRun(svc, s, occurrenceId);
  return {
    automationId,
    result: { automationId, occurrenceId, occurrenceKey, status: 'claimed', leaseExpiresAt },
    afterCommit: async () => {
      await dispatch(occurrenceId);
    },
  };
}

function cancelPending(what: string, details: Record<string, unknown>): ContractError {
  return new ContractError(
    'CANCEL_PENDING',
    `${what}: cancellation requested; it completes when the runtime acknowledges`,
    details,
    { retryable: true },
  );
}

/**
 * The shared cancellation of an occurrence's work. Nothing dispatched yet: settled cancelled at once.
 * A running session: the request is committed, the session told to stop after the commit, and the answer
 * is CANCEL_PENDING until the runtime acknowledges (the worker then settles everything cancelled).
 */
async function cancelOccurrenceWork(
  svc: EngineServices,
  ctx: CommandContext,
  occurrenceId: string,
): Promise<CommandOutcome> {
  const s = step(ctx);
  const occurrence = await getOccurrence(ctx, occurrenceId);
  const state = stateOf(occurrence);
  const reason = (ctx.envelope.payload.reason as string | undefined) ?? 'cancelled on request';
  const requestedBy = ctx.envelope.origin.principal;
  const runId = occurrence.data.attributes.activeRunRef;
  const result = (status: string) => ({
    result: { occurrenceId, ...(runId === undefined ? {} : { runId }), status, requestedAt: ctx.now },
    automationId: occurrence.data.attributes.automationId,
  });
  if (state === OccurrenceState.cancelled) return result('cancelled');
  if (state === OccurrenceState.recovery_required || state === OccurrenceState.recovering) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} is ${state}: resolve it with occurrence.recover.v1`,
      { occurrenceId, state },
    );
  }
  if (!OCCURRENCE_LIVE_STATES.has(state)) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} already settled ${state}; completion won`,
      { occurrenceId, state },
    );
  }
  const run = runId === undefined ? undefined : await loadRun(ctx.tx, runId);
  const attemptId = run?.data.attributes.attemptIds.at(-1);
  const attempt = attemptId === undefined ? undefined : await loadAttempt(ctx.tx, attemptId);
  const attemptState = attempt === undefined ? undefined : stateOf(attempt);

  if (attempt !== undefined && (attemptState === AttemptState.started || attemptState === AttemptState.observing)) {
    // A session exists (or may): request, stop after commit, answer CANCEL_PENDING.
    const sessionId = attempt.data.attributes.workerCorrelation?.sessionId;
    if (attempt.data.attributes.cancelRequestedAt === undefined) {
      await updateEntityAttributes<AttemptAttributes>(ctx.tx, KINDS.attempt, attempt.id, attempt.version, (a) => ({
        ...a,
        cancelRequestedAt: ctx.now,
      }));
      await updateEntityAttributes<OccurrenceAttributes>(
        ctx.tx,
        KINDS.occurrence,
        occurrenceId,
        occurrence.version,
        (a) => ({ ...a, cancellation: { requestedAt: ctx.now, requestedBy }, updatedAt: ctx.now }),
      );
    }
    const runtime = svc.runtime(attempt.data.attributes.runtimeId);
    return {
      result: {},
      rejectAfterCommit: cancelPending(`attempt ${attempt.id} is running`, {
        occurrenceId,
        attemptId: attempt.id,
        requestedAt: attempt.data.attributes.cancelRequestedAt ?? ctx.now,
      }),
      afterCommit: async () => {
        if (runtime !== undefined && sessionId !== undefined) await runtime.cancel(sessionId, svc.clock.now());
      },
    };
  }
  if (attempt !== undefined && attemptState === AttemptState.dispatching) {
    const outbox = await readAttemptLaunch(ctx.tx, attempt.id, attemptContext(attempt).dispatchGeneration);
    if (outbox?.state === OutboxState.sending) {
      if (attempt.data.attributes.cancelRequestedAt === undefined) {
        await updateEntityAttributes<AttemptAttributes>(ctx.tx, KINDS.attempt, attempt.id, attempt.version, (a) => ({
          ...a,
          cancelRequestedAt: ctx.now,
        }));
      }
      return {
        result: {},
        rejectAfterCommit: cancelPending(`attempt ${attempt.id} is being launched`, {
          occurrenceId,
          attemptId: attempt.id,
        }),
      };
    }
    if (outbox?.state === OutboxState.pending) {
      await moveOutbox(s, outbox.id, {
        type: 'outbox_work_cancelled',
        actor: 'command_handler',
        occurrenceId,
        reason: 'occurrence_cancelled',
      });
    }
    await moveEntity<AttemptAttributes>(
      s,
      'attempt',
      attempt.id,
      {
        type: 'cancel_acknowledged',
        actor: 'command_handler',
        cancellation: { requestedAt: ctx.now, reconciledAt: ctx.now },
      },
      (a) => ({ ...a, stateReason: reason, settledAt: ctx.now }),
    );
  } else if (attempt !== undefined && attemptState === AttemptState.adopted) {
    await moveEntity<AttemptAttributes>(
      s,
      'attempt',
      attempt.id,
      { type: 'cancel_acknowledged', actor: 'command_handler', cancellation: { requestedAt: ctx.now } },
      (a) => ({ ...a, stateReason: reason, settledAt: ctx.now }),
    );
  }
  if (run !== undefined && (stateOf(run) === RunState.accepted || stateOf(run) === RunState.running)) {
    await moveEntity<RunAttributes>(
      s,
      'run',
      run.id,
      { type: 'cancel_acknowledged', actor: 'command_handler' },
      (a) => ({
        ...a,
        stateReason: reason,
        finishedAt: ctx.now,
        terminalDisposition: { outcome: 'cancelled', failureClass: 'cancelled_by_request', detail: reason },
      }),
    );
  }
  const cancellation = {
    requestedAt: ctx.now,
    reconciledAt: ctx.now,
    ...(state === OccurrenceState.running ? { acknowledgedAt: ctx.now } : {}),
  };
  await endRunHold(s, occurrence, { type: 'hold_run_cancelled', actor: 'command_handler' });
  await moveEntity<OccurrenceAttributes>(
    s,
    'occurrence',
    occurrenceId,
    { type: 'cancel_acknowledged', actor: 'command_handler', cancellation },
    (a) => ({
      ...a,
      stateReason: reason,
      cancellation: { ...cancellation, requestedBy },
      updatedAt: ctx.now,
    }),
  );
  return result('cancelled');
}

/** attempt.retry.v1: attempt n+1 of a held run; the occurrence returns to planned for the scheduler. */
async function retryAttempt(svc: EngineServices, ctx: CommandContext): Promise<CommandOutcome> {
  const { runId, priorAttemptNumber, priorDisposition } = ctx.envelope.payload as {
    runId: string;
    priorAttemptNumber: number;
    priorDisposition: AttemptDisposition;
  };
  const run = await getRun(ctx, runId);
  if (stateOf(run) !== RunState.running)
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `run ${runId} is ${stateOf(run)}; only a held running run is retried`,
      { runId, state: stateOf(run) },
    );
  const latestId = run.data.attributes.attemptIds.at(-1)!;
  const latest = await loadAttempt(ctx.tx, latestId);
  const latestState = stateOf(latest);
  const latestNumber = attemptContext(latest).attemptNumber;
  if (latestState === AttemptState.ambiguous || priorDisposition === 'ambiguous') {
    throw new ContractError(
      'AMBIGUOUS_RETRY_FORBIDDEN',
      `attempt ${latestId} is ambiguous: only occurrence.recover.v1 may open work after it`,
      { runId, attemptId: latestId },
    );
  }
  if (!ATTEMPT_TERMINAL_STATES.has(latestState))
    throw new ContractError('ILLEGAL_TRANSITION', `attempt ${latestId} is still ${latestState}`, {
      runId,
      attemptId: latestId,
      state: latestState,
    });
  if (priorAttemptNumber !== latestNumber || priorDisposition !== latestState) {
    throw new ContractError(
      'RETRY_DISPOSITION_INVALID',
      `the latest attempt is #${latestNumber} ${latestState}, not #${priorAttemptNumber} ${priorDisposition}`,
      {
        runId,
        latestAttemptNumber: latestNumber,
        latestDisposition: latestState,
      },
    );
  }
  if (latestNumber >= MAX_ATTEMPTS_PER_RUN)
    throw new ContractError('ILLEGAL_TRANSITION', `run ${runId} already has ${MAX_ATTEMPTS_PER_RUN} attempts`, {
      runId,
    });
  const occurrence = await getOccurrence(ctx, runContext(run).occurrenceId);
  if (occurrence.data.attributes.cancellation !== undefined || latest.data.attributes.cancelRequestedAt !== undefined) {
    throw new ContractError(
      'CANCEL_PENDING',
      `run ${runId} has an unresolved cancellation`,
      { runId },
      { retryable: true },
    );
  }
  const o = occurrenceContext(occurrence);
  if (o.deadlineAt === null || Date.parse(o.deadlineAt) <= Date.parse(ctx.now)) {
    throw new ContractError('DEADLINE_EXCEEDED', `run ${runId} passed its deadline ${String(o.deadlineAt)}`, {
      runId,
      deadlineAt: o.deadlineAt,
    });
  }
  const definition = await readDefinitionRecord(ctx.tx, run.data.attributes.automationId);
  if (stateOf(definition) !== DefinitionState.active || (await isQuarantined(ctx.tx, definition.id))) {
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${definition.id} is not active and unquarantined`, {
      automationId: definition.id,
    });
  }
  const s = step(ctx);
  // The guard's fact is the hold machine's committed state, read before this retry moves anything.
  const runHeld = await isRunHeld(ctx.tx, occurrence);
  const next = await svc.actors.dispatcher.openAttempt(s, run, occurrence, {
    attemptNumber: latestNumber + 1,
    fenceGeneration: o.fence.generation + 1,
    leaseExpiresAt: o.deadlineAt,
    prior: { attemptNumber: latestNumber, outcome: latestState as AttemptDisposition },
    classification: 'operator_retry',
    runtimeId: latest.data.attributes.runtimeId,
  });
  await moveEntity<OccurrenceAttributes>(
    s,
    'occurrence',
    occurrence.id,
    {
      type: 'operator_retry',
      actor: 'command_handler',
      runId,
      priorAttemptNumber: latestNumber,
      priorDisposition: latestState,
      latestAttemptTerminal: true,
      runHeld,
      quarantined: false,
      stopUnresolved: false,
    },
    (a) => ({ ...a, stateReason: `operator retry: attempt ${latestNumber + 1}`, updatedAt: ctx.now }),
  );
  await moveRunHold(s, occurrence, { type: 'hold_retry_accepted', actor: 'command_handler', attemptId: next.id });
  await updateEntityAttributes<RunAttributes>(
    ctx.tx,
    KINDS.run,
    runId,
    (await loadRun(ctx.tx, runId)).version,
    (a) => ({ ...a, stateReason: 'operator_retry' }),
  );
  return {
    automationId: run.data.attributes.automationId,
    result: {
      runId,
      occurrenceId: occurrence.id,
      attemptId: next.id,
      attemptNumber: latestNumber + 1,
      priorDisposition: latestState,
      status: 'planned',
      retriedAt: ctx.now,
    },
  };
}

/** occurrence.recover.v1: the operator's determination for an occurrence in recovery_required. */
async function recover(
  svc: EngineServices,
  dispatch: (id: string) => Promise<unknown>,
  ctx: CommandContext,
): Promise<CommandOutcome> {
  const { occurrenceId, evidenceDetermination, statement } = ctx.envelope.payload as {
    occurrenceId: string;
    evidenceDetermination: string;
    statement: string;
  };
  const occurrence = await getOccurrence(ctx, occurrenceId);
  if (stateOf(occurrence) !== OccurrenceState.recovery_required) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} is ${stateOf(occurrence)}, not recovery_required`,
      { occurrenceId, state: stateOf(occurrence) },
    );
  }
  const s = step(ctx);
  const runId = occurrence.data.attributes.activeRunRef;
  const run = runId === undefined ? undefined : await loadRun(ctx.tx, runId);
  const latestId = run?.data.attributes.attemptIds.at(-1);
  const latest = latestId === undefined ? undefined : await loadAttempt(ctx.tx, latestId);
  const result = { occurrenceId, evidenceDetermination, statement, recoveredAt: ctx.now };
  if (evidenceDetermination === 'failed_deterministic') {
    await moveEntity<OccurrenceAttributes>(
      s,
      'occurrence',
      occurrenceId,
      { type: 'operator_recovery_failed', actor: 'command_handler', evidenceDetermination, statement },
      (a) => ({
        ...a,
        stateReason: `operator determined failed: ${statement}`.slice(0, 500),
        recovery: { ...(a.recovery ?? { enteredAt: ctx.now }), resolvedDisposition: 'failed_deterministic' },
        updatedAt: ctx.now,
      }),
    );
    if (
      run !== undefined &&
      latest !== undefined &&
      stateOf(run) === RunState.running &&
      stateOf(latest) === AttemptState.ambiguous
    ) {
      const reason = 'operator determined failure after ambiguous evidence';
      await svc.actors.dispatcher.settleRunAmbiguous(s, run, latest, reason, statement.slice(0, 500));
    }
    return { automationId: occurrence.data.attributes.automationId, result: { ...result, status: 'failed' } };
  }
  if (
    run === undefined ||
    latest === undefined ||
    stateOf(run) !== RunState.running ||
    stateOf(latest) !== AttemptState.ambiguous
  ) {
    throw new ContractError(
      'ILLEGAL_TRANSITION',
      `occurrence ${occurrenceId} has no running run with an ambiguous latest attempt`,
      { occurrenceId },
    );
  }
  const o = occurrenceContext(occurrence);
  if (o.deadlineAt === null || Date.parse(o.deadlineAt) <= Date.parse(ctx.now)) {
    throw new ContractError('DEADLINE_EXCEEDED', `run ${run.id} passed its deadline ${String(o.deadlineAt)}`, {
      runId: run.id,
      deadlineAt: o.deadlineAt,
    });
  }
  const latestNumber = attemptContext(latest).attemptNumber;
  if (latestNumber >= MAX_ATTEMPTS_PER_RUN)
    throw new ContractError('ILLEGAL_TRANSITION', `run ${run.id} already has ${MAX_ATTEMPTS_PER_RUN} attempts`, {
      runId: run.id,
    });
  const definition = await readDefinitionRecord(ctx.tx, occurrence.data.attributes.automationId);
  if (stateOf(definition) !== DefinitionState.active)
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${definition.id} is not active`, {
      automationId: definition.id,
    });
  const leaseExpiresAt = svc.leaseExpiresAt(ctx.now);
  const next = await svc.actors.dispatcher.openAttempt(s, run, occurrence, {
    attemptNumber: latestNumber + 1,
    fenceGeneration: o.fence.generation + 1,
    leaseExpiresAt,
    prior: { attemptNumber: latestNumber, outcome: 'ambiguous' },
    classification: 'operator_recovery',
    runtimeId: latest.data.attributes.runtimeId,
  });
  await moveEntity<OccurrenceAttributes>(
    s,
    'occurrence',
    occurrenceId,
    {
      type: 'operator_recovery_attempt',
      actor: 'command_handler',
      evidenceDetermination,
      statement,
      attemptId: next.id,
      attemptNumber: latestNumber + 1,
      adoptionKey: attemptContext(next).adoptionKey,
      priorDisposition: 'ambiguous',
      leaseExpiresAt,
    },
    (a) => ({ ...a, stateReason: `operator recovery: attempt ${latestNumber + 1}`, updatedAt: ctx.now }),
  );
  return {
    automationId: occurrence.data.attributes.automationId,
    result: { ...result, status: 'dispatching', runId: run.id, attemptId: next.id, attemptNumber: latestNumber + 1 },
    afterCommit: async () => {
      await dispatch(occurrenceId);
    },
  };
}

/** Lifts a quarantine (engine extension): planning, claims and manual runs resume. */
async function unquarantine(ctx: CommandContext): Promise<CommandOutcome> {
  const automationId = ctx.envelope.payload.automationId as string;
  await readDefinitionRecord(ctx.tx, automationId);
  if (!(await isQuarantined(ctx.tx, automationId)))
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${automationId} is not quarantined`, { automationId });
  const before = await moveQuarantine(step(ctx), automationId, { type: 'quarantine_lifted', actor: 'command_handler' });
  return {
    automationId,
    result: { automationId, quarantined: false, quarantinedSince: before.since, reason: before.reason },
  };
}

/** The occurrence/run/attempt commands, bound to an engine's services and its immediate dispatch. */
export function operatorCommands(
  svc: EngineServices,
  dispatch: (occurrenceId: string) => Promise<LaunchOutcome | undefined>,
): OperatorCommands {
  return {
    mutations: {
      'occurrence.runNow.v1': (ctx) => runNow(svc, dispatch, ctx),
      'occurrence.cancel.v1': (ctx) => cancelOccurrenceWork(svc, ctx, ctx.envelope.payload.occurrenceId as string),
      'run.cancel.v1': async (ctx) =>
        cancelOccurrenceWork(
          svc,
          ctx,
          runContext(await getRun(ctx, ctx.envelope.payload.runId as string)).occurrenceId,
        ),
      'attempt.cancel.v1': async (ctx) => {
        const attemptId = ctx.envelope.payload.attemptId as string;
        const attempt = await ctx.tx.get<Awaited<ReturnType<typeof loadAttempt>>['data']>(KINDS.attempt, attemptId);
        if (attempt === undefined) throw notFound('attempt', attemptId);
        const a = attemptContext(attempt as Awaited<ReturnType<typeof loadAttempt>>);
        const run = await getRun(ctx, a.runId);
        if (run.data.attributes.attemptIds.at(-1) !== attemptId) {
          throw new ContractError(
            'ILLEGAL_TRANSITION',
            `attempt ${attemptId} is not the current attempt of run ${a.runId}`,
            { attemptId, runId: a.runId },
          );
        }
        return cancelOccurrenceWork(svc, ctx, a.occurrenceId);
      },
      'attempt.retry.v1': (ctx) => retryAttempt(svc, ctx),
      'occurrence.recover.v1': (ctx) => recover(svc, dispatch, ctx),
      'x-coven-automata.definition.unquarantine.v1': unquarantine,
    },
    queries: {
      'run.history.v1': (payload) => svc.store.read((r) => runHistory(r, payload as never)),
      'definition.health.v1': (payload) => svc.store.read((r) => definitionHealth(svc, r, payload as never)),
    },
  };
}
