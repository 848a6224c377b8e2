import { AsyncLocalStorage } from 'node:async_hooks';
import { and, assign, setup, type AnyStateMachine } from 'xstate';
import {
  attemptMachine,
  definitionMachine,
  deliveryMachine,
  occurrenceMachine,
  outboxMachine,
  quarantineMachine,
  runHoldMachine,
  runMachine,
} from '../../machines/index.js';
import * as attempt from '../guards/attempt.js';
import { actorIs } from '../guards/common.js';
import * as definition from '../guards/definition.js';
import * as delivery from '../guards/delivery.js';
import * as occurrence from '../guards/occurrence.js';
import * as outbox from '../guards/outbox.js';
import * as quarantine from '../guards/quarantine.js';
import * as runHold from '../guards/run-hold.js';
import * as run from '../guards/run.js';
import type { ExtensionSpec } from '../spec/extension-spec.js';
import type { LifecycleSpec, SpecTransition } from '../spec/lifecycle-spec.js';
import { describeTransition, type ProvableMachine } from '../spec/soundness.js';

/** Every lifecycle the engine drives: the contract's four and this project's four extension machines. */
export type MachineEntity =
  'definition' | 'occurrence' | 'run' | 'attempt' | 'outbox' | 'run-hold' | 'quarantine' | 'delivery';

/** The machines one engine decides with, by entity. */
export type MachineSet = Readonly<Record<MachineEntity, AnyStateMachine>>;

/** The machines generated into machines/ from this package's spec: what every engine uses by default. */
export const GENERATED_MACHINE_SET: MachineSet = {
  definition: definitionMachine as unknown as AnyStateMachine,
  occurrence: occurrenceMachine as unknown as AnyStateMachine,
  run: runMachine as unknown as AnyStateMachine,
  attempt: attemptMachine as unknown as AnyStateMachine,
  outbox: outboxMachine as unknown as AnyStateMachine,
  'run-hold': runHoldMachine as unknown as AnyStateMachine,
  quarantine: quarantineMachine as unknown as AnyStateMachine,
  delivery: deliveryMachine as unknown as AnyStateMachine,
};

type Fn = (...args: never[]) => unknown;
/** What a spec machine's guards and context come from: the guard catalogue of its entity (src/guards/<entity>.ts). */
interface GuardCatalogue {
  guards: Record<string, Fn>;
  create: Fn;
  apply: Fn;
}

const CATALOGUES: Record<MachineEntity, GuardCatalogue> = {
  definition: {
    guards: definition.definitionGuards,
    create: definition.createDefinitionContext,
    apply: definition.applyDefinitionEvent,
  },
  occurrence: {
    guards: occurrence.occurrenceGuards,
    create: occurrence.createOccurrenceContext,
    apply: occurrence.applyOccurrenceEvent,
  },
  run: { guards: run.runGuards, create: run.createRunContext, apply: run.applyRunEvent },
  attempt: { guards: attempt.attemptGuards, create: attempt.createAttemptContext, apply: attempt.applyAttemptEvent },
  outbox: { guards: outbox.outboxGuards, create: outbox.createOutboxContext, apply: outbox.applyOutboxEvent },
  'run-hold': {
    guards: runHold.runHoldGuards,
    create: runHold.createRunHoldContext,
    apply: runHold.applyRunHoldEvent,
  },
  quarantine: {
    guards: quarantine.quarantineGuards,
    create: quarantine.createQuarantineContext,
    apply: quarantine.applyQuarantineEvent,
  },
  delivery: {
    guards: delivery.deliveryGuards,
    create: delivery.createDeliveryContext,
    apply: delivery.applyDeliveryEvent,
  },
};

const isEntity = (entity: string): entity is MachineEntity => Object.hasOwn(CATALOGUES, entity);

/** The transition config the generator writes for `t` (see tools/machine-codegen.ts), as a value. */
function transitionConfig(t: SpecTransition): Record<string, unknown> {
  const role = { type: 'actorIs', params: { actor: t.actor } };
  return {
    target: t.to,
    guard: t.guard === undefined ? role : and([role, t.guard.id]),
    actions: 'applyEvent',
    ...(t.guard === undefined ? {} : { description: t.guard.text }),
    meta: { actor: t.actor, ...(t.guard === undefined ? {} : { guard: { id: t.guard.id, text: t.guard.text } }) },
  };
}

function stateConfig(machine: ProvableMachine, state: string): Record<string, unknown> {
  if (machine.terminal.includes(state)) return { type: 'final' };
  const on: Record<string, unknown[]> = {};
  for (const t of machine.transitions.filter((x) => x.from === state)) (on[t.on] ??= []).push(transitionConfig(t));
  return { on };
}

/** One machine built from its spec entry with its entity's guard catalogue: what the generator would emit. */
function buildMachine(machine: ProvableMachine, catalogue: GuardCatalogue): AnyStateMachine {
  const apply = catalogue.apply as (context: unknown, event: unknown) => Record<string, unknown>;
  const create = catalogue.create as (input: unknown) => Record<string, unknown>;
  const machineSetup = setup({
    guards: { actorIs, ...catalogue.guards } as never,
    actions: { applyEvent: assign(({ context, event }) => apply(context, event)) } as never,
  });
  return machineSetup.createMachine({
    id: machine.id,
    initial: machine.initial,
    context: ({ input }: { input: unknown }) => create(input),
    states: Object.fromEntries(machine.states.map((s) => [s, stateConfig(machine, s)])),
  } as never) as unknown as AnyStateMachine;
}

/** Guards a spec names that its entity's catalogue does not implement: a guard is code, a spec only names it. */
function unimplementedGuards(machine: ProvableMachine, catalogue: GuardCatalogue): string[] {
  return machine.transitions
    .filter((t) => t.guard !== undefined && !Object.hasOwn(catalogue.guards, t.guard.id))
    .map((t) => `${describeTransition(machine, t)}: guard '${t.guard!.id}' is not implemented by the guard catalogue`);
}

/** Machines built from specs in memory, or the reasons they cannot be. */
export type BuiltMachineSet = { machines: MachineSet; problems: [] } | { machines: undefined; problems: string[] };

/**
 * Builds the engine's machines from a lifecycle spec and an extension spec, in memory, exactly as
 * `npm run generate` would write them, so an edited spec can be proven without touching machines/. Run the
 * static proofs first (`specProblems`): this only refuses what it cannot build — an unknown entity, or a guard
 * the guard catalogue does not implement.
 */
export function buildMachineSet(spec: LifecycleSpec, extension: ExtensionSpec): BuiltMachineSet {
  const problems: string[] = [];
  const built: Partial<Record<MachineEntity, AnyStateMachine>> = {};
  for (const machine of [...spec.machines, ...extension.machines]) {
    if (!isEntity(machine.entity)) {
      problems.push(`${machine.id}: the engine has no lifecycle '${machine.entity}'`);
      continue;
    }
    const catalogue = CATALOGUES[machine.entity];
    const missing = unimplementedGuards(machine, catalogue);
    problems.push(...missing);
    if (missing.length === 0) built[machine.entity] = buildMachine(machine, catalogue);
  }
  const absent = (Object.keys(CATALOGUES) as MachineEntity[]).filter((e) => built[e] === undefined);
  if (problems.length === 0 && absent.length > 0) problems.push(`the specs define no machine for ${absent.join(', ')}`);
  return problems.length > 0 ? { machines: undefined, problems } : { machines: built as MachineSet, problems: [] };
}

const scope = new AsyncLocalStorage<MachineSet>();

/** The machines the current engine step decides with: those of {@link runOnMachines}, else the generated ones. */
export function machinesInUse(): MachineSet {
  return scope.getStore() ?? GENERATED_MACHINE_SET;
}

/**
 * Runs `work` — and every engine step it starts, however long it runs — on `machines` instead of the generated
 * ones: how the invariant suite proves an engine built on a user's spec without regenerating machines/.
 *
 * @example
 * ```ts
 * const built = buildMachineSet(loadLifecycleSpec('my-spec.json'), loadExtensionSpec());
 * if (built.machines !== undefined) await runOnMachines(built.machines, () => engine.tick());
 * ```
 */
export function runOnMachines<T>(machines: MachineSet, work: () => T): T {
  return scope.run(machines, work);
}
