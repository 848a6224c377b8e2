import { integrityOf, verifyIntegrity } from '../../contract/digest.js';
import { redactPublished } from '../../contract/redaction.js';
import { KINDS } from '../../domain/records.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import type { SimulatedBehavior } from '../../runtime/simulated-runtime.js';
import * as authority from './authority-ops.js';
import { contractKey, currentDefinition, envelope, reviseWith, type VectorRun } from './vector-session.js';

type Op = Record<string, unknown> & { op: string };
type Handler = (run: VectorRun, op: Op, at: string | undefined) => Promise<void> | void;
/** An op this engine performs, or the reason it cannot: the missing profile, named once, here. */
export type OpEntry = { handle: Handler } | { unsupported: string };

const BEHAVIOR: Record<string, SimulatedBehavior> = {
  available: 'succeed',
  unavailable: 'unavailable',
  timeout: 'hang',
  'lost-after-side-effect': 'lost-after-side-effect',
  'duplicate-response': 'duplicate-response',
  'out-of-order-response': 'out-of-order-response',
};

const setClock = (run: VectorRun, at: string | undefined) => {
  if (at !== undefined) run.clock.set(at);
};

async function tick(run: VectorRun, at: string | undefined): Promise<void> {
  setClock(run, at);
  await run.pass();
}

async function changeLifecycle(run: VectorRun, op: Op, at: string | undefined): Promise<void> {
  setClock(run, at);
  const current = await currentDefinition(run.engine.commands, String(op.automationId));
  const r = await run.engine.commands.handle(
    envelope(
      `definition.${op.op}.v1`,
      { automationId: op.automationId },
      { expectedRevision: current.revision as number },
    ),
  );
  if (r.outcome === 'rejected') run.refusals.set(String(op.label ?? op.op), r);
  else if (op.op === 'activate') run.activations.set(String(op.automationId), run.clock.now().toISOString());
}

async function runNow(run: VectorRun, op: Op, at: string | undefined): Promise<void> {
  setClock(run, at);
  if (run.takeCrash('command')) {
    run.notes.push('runNow crashed before its commit: nothing of it is durable');
    return;
  }
  const r = await run.engine.commands.handle(
    envelope(
      'occurrence.runNow.v1',
      { automationId: op.automationId },
      { adoptionKey: contractKey(String(op.adoptionKey), run.notes) },
    ),
  );
  if (r.outcome !== 'committed') run.refusals.set(String(op.label ?? op.adoptionKey), r);
  // Requests at one instant meet the first one's live run: the pass that launches it runs once time moves on.
  if (!run.nextOpIsSameInstantRunNow()) await run.engine.tick();
}

/** cancel: run.cancel.v1 on the named run, else occurrence.cancel.v1 on the automation's newest live occurrence. */
async function cancel(run: VectorRun, op: Op, at: string | undefined): Promise<void> {
  setClock(run, at);
  const reason = typeof op.reason === 'string' ? { reason: op.reason } : {};
  let response;
  if (typeof op.runId === 'string')
    response = await run.engine.commands.handle(envelope('run.cancel.v1', { runId: op.runId, ...reason }));
  else {
    const live = (await run.liveOccurrences()).filter((o) => o.automationId === op.automationId);
    const target = live.at(-1);
    if (target === undefined) {
      run.notes.push(`cancel of ${String(op.automationId)}: no live occurrence to cancel`);
      return;
    }
    response = await run.engine.commands.handle(
      envelope('occurrence.cancel.v1', { occurrenceId: target.occurrenceId, ...reason }),
    );
  }
  if (response.outcome === 'rejected') run.refusals.set(String(op.label ?? 'cancel'), response);
}

async function setRetryPolicy(run: VectorRun, op: Op): Promise<void> {
  for (const id of await run.definitionIds()) {
    await reviseWith(run.engine.commands, id, (body) => {
      const policies = body.policies as Record<string, unknown>;
      const seconds = Number(op.backoffSeconds ?? 0);
      policies.retry = {
        maxAttempts: Number(op.maxAttempts ?? 1),
        backoffPolicy: seconds > 0 ? 'fixed' : 'none',
        ...(seconds > 0 ? { backoffSeconds: seconds } : {}),
        retryableClasses: ['runtime_unavailable', 'transient_dispatch'],
      };
    });
  }
}

async function setDefinitionRevision(run: VectorRun, op: Op): Promise<void> {
  const current = await currentDefinition(run.engine.commands, String(op.automationId));
  const target = Number(op.revision);
  const { integrity: _i, ...body } = structuredClone(current);
  body.revision = target;
  const r = await run.engine.commands.handle(
    envelope(
      'definition.revise.v1',
      { definition: { ...body, integrity: integrityOf(body) } },
      { expectedRevision: Math.max(1, target - 1) },
    ),
  );
  if (r.outcome === 'rejected') run.refusals.set(String(op.label), r);
}

/**
 * verifyReceipts: the integrity check `coven-automata verify` runs, on every stored receipt, or on the redacted
 * copies once a redactReceipts op made them.
 */
async function verifyReceipts(run: VectorRun): Promise<void> {
  const receipts = await run.store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt));
  run.receiptVerdicts = (run.redactedReceipts ?? receipts.map((r) => r.data)).map((r) => verifyIntegrity(r).valid);
}

/**
 * redactReceipts: this engine keeps no run logs (a session's log stays with its runtime), so what a reader gets
 * is the published receipt: each is read through receipt.get.v1 and redacted as every published view is.
 */
async function redactReceipts(run: VectorRun): Promise<void> {
  const ids = (await run.store.read((r) => r.list(KINDS.receipt))).map((r) => r.id);
  run.redactedReceipts = [];
  for (const receiptId of ids) {
    const got = await run.engine.commands.handle(envelope('receipt.get.v1', { receiptId }));
    run.redactedReceipts.push(redactPublished(got.result!.receipt as Record<string, unknown>));
  }
  run.notes.push(`redactReceipts: ${ids.length} receipts read through receipt.get.v1 and redacted for publication`);
}

/** tamperReceipt: one stored receipt's body changes after sealing, its integrity digest left as it was. */
async function tamperReceipt(run: VectorRun): Promise<void> {
  const receipts = await run.store.read((r) => r.list<Record<string, unknown>>(KINDS.receipt));
  const first = receipts[0];
  if (first === undefined) {
    run.notes.push('tamperReceipt: no receipt to tamper with');
    return;
  }
  // Sealed records refuse every write, so the body changes underneath the engine, as on a disk.
  run.tampering.tamper(KINDS.receipt, first.id, (data) => ({
    ...(data as Record<string, unknown>),
    producedAt: '1970-01-01T00:00:00.000Z',
  }));
}

/**
 * deliveryBehavior: the delivery port commits, or fails at its commit (the rename), from now on. Upstream's model
 * delivers every run's output; this engine delivers only for definitions naming an atomic outputTarget, so each
 * definition that names none is revised to deliver to one of its own under the port's root.
 */
async function deliveryBehavior(run: VectorRun, op: Op): Promise<void> {
  const behavior = String(op.delivery);
  if (behavior !== 'commit' && behavior !== 'commit-failure') {
    run.unsupportedOps.push(`deliveryBehavior ${behavior}: not commit or commit-failure`);
    return;
  }
  run.delivery.behavior = behavior;
  for (const id of await run.definitionIds()) {
    const policies = (await currentDefinition(run.engine.commands, id)).policies as Record<string, unknown>;
    if (policies.delivery !== undefined) continue;
    const outputTarget = `conformance/${id}.out`;
    const revised = await reviseWith(run.engine.commands, id, (body) => {
      (body.policies as Record<string, unknown>).delivery = { outputTarget, mode: 'atomic' };
    });
    if (revised.outcome === 'committed')
      run.notes.push(
        `deliveryBehavior ${behavior}: ${id} revised to deliver to the atomic outputTarget ${outputTarget}`,
      );
    else run.notes.push(`deliveryBehavior: revising ${id} to deliver was refused: ${String(revised.error?.message)}`);
  }
}

/** setRetention: the engine's own retention, every class kept for the window, rebuilt into the engine. */
function setRetention(run: VectorRun, op: Op): void {
  const match = /^(\d+)(s|m|h|d)$/.exec(String(op.window));
  if (match === null) {
    run.unsupportedOps.push(`setRetention window ${String(op.window)}: not <n>s|m|h|d`);
    return;
  }
  const seconds = Number(match[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as 's' | 'm' | 'h' | 'd'];
  const days = seconds / 86_400;
  run.useRetention({ windowDays: { ephemeral: days, standard: days, extended: days } });
}

/** An op performed by one of the engine's commands (authority-ops.ts); a refusal is kept under the op's label. */
function throughCommand(perform: (handle: authority.AuthorityOpsHandle, op: Op) => Promise<CommandResponse>): Handler {
  return async (run, op) => {
    const answer = await perform({ engine: run.engine, clock: run.clock, notes: run.notes }, op);
    if (answer.outcome === 'rejected') {
      run.refusals.set(String(op.label ?? op.op), answer);
      run.notes.push(`${op.op} refused: ${String(answer.error?.code)}: ${String(answer.error?.message)}`);
    }
  };
}

/** Every op of conformance.vector.v1, mapped to the engine's mechanism or to the profile it lacks. */
export const OPS: Record<string, OpEntry> = {
  tick: { handle: (run, _op, at) => tick(run, at) },
  advance: { handle: (run, _op, at) => setClock(run, at) },
  suspend: { handle: (run, _op, at) => setClock(run, at) },
  resume: { handle: (run, _op, at) => setClock(run, at) },
  setHostTimezone: {
    handle: (run, op) =>
      void run.notes.push(`host timezone set to ${String(op.hostTimezone)}: durable zones are never reinterpreted`),
  },
  activate: { handle: changeLifecycle },
  pause: { handle: changeLifecycle },
  runNow: { handle: runNow },
  cancel: { handle: cancel },
  crash: { handle: (run, op) => run.armCrash(String(op.during)) },
  restart: { handle: async (run, _op, at) => run.restart(at) },
  runtimeBehavior: {
    handle: (run, op) => {
      const behavior = BEHAVIOR[String(op.behavior)];
      if (behavior === undefined) run.unsupportedOps.push(`runtimeBehavior ${String(op.behavior)}`);
      else run.runtime.defaultBehavior = behavior;
    },
  },
  setRetryPolicy: { handle: setRetryPolicy },
  setDefinitionRevision: { handle: setDefinitionRevision },
  subscribe: { handle: (run, op) => run.subscribe(Number(op.afterCursor ?? 0)) },
  deliver: { handle: async (run) => run.deliverAll() },
  verifyReceipts: { handle: verifyReceipts },
  tamperReceipt: { handle: tamperReceipt },
  setRetention: { handle: setRetention },
  setLeader: { handle: (run, op) => run.setLeader(op.available !== false) },
  grantApproval: { handle: throughCommand(authority.grantApproval) },
  expireApprovals: { handle: throughCommand(authority.expireApprovals) },
  revokeFamiliar: { handle: throughCommand(authority.revokeFamiliar) },
  setAuthority: { handle: throughCommand(authority.setAuthority) },
  setRuntimeCapabilities: { handle: throughCommand(authority.setRuntimeCapabilities) },
  deliveryBehavior: { handle: deliveryBehavior },
  redactReceipts: { handle: redactReceipts },
  erase: { handle: throughCommand(authority.erase) },
};

/** Performs one op, or records it unsupported with its reason. */
export async function applyOp(run: VectorRun, op: Op): Promise<void> {
  const entry = OPS[op.op];
  const at = typeof op.at === 'string' ? op.at : undefined;
  if (entry === undefined) run.unsupportedOps.push(`unknown op ${op.op}: not in conformance.vector.v1`);
  else if ('unsupported' in entry) {
    setClock(run, at);
    run.unsupportedOps.push(`${op.op}: ${entry.unsupported}`);
  } else await entry.handle(run, op, at);
}
