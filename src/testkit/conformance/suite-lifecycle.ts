import type { CommandResponse } from '../../command-handler/envelope.js';
import { integrityOf } from '../../contract/digest.js';
import { caseWorld, type CaseRunner } from './suite-cases.js';
import { currentDefinition, envelope, reviseWith } from './vector-session.js';
import { legacyFlatDefinition } from './legacy-flat.js';

const ID = 'lifecycle-probe';
const FLAT = legacyFlatDefinition({
  id: ID,
  name: 'Lifecycle probe',
  status: 'PAUSED',
  familiarId: 'conformance-familiar',
  cwd: '/work/project',
  prompt: 'Run the lifecycle probe.',
});

type World = ReturnType<typeof caseWorld>;

async function lifecycleCommand(world: World, name: string): Promise<CommandResponse> {
  const current = await currentDefinition(world.engine.commands, ID).catch(() => undefined);
  const revision = (current?.revision as number | undefined) ?? 1;
  return world.send(envelope(`definition.${name}.v1`, { automationId: ID }, { expectedRevision: revision }));
}

/** Creation through the contract: an import lands in draft and definition.revise.v1 moves it to paused. */
async function createPaused(world: World): Promise<CommandResponse> {
  const imported = await world.send(envelope('legacy.import.v1', { source: 'flat-definitions', definitions: [FLAT] }));
  if (imported.outcome !== 'committed') return imported;
  return reviseWith(world.engine.commands, ID, () => undefined, 'paused');
}

/** definition.create.v1 of the probe's body with lifecycleState disabled (the body taken from a scratch import). */
async function createDisabled(world: World): Promise<CommandResponse> {
  const scratch = caseWorld();
  await scratch.send(envelope('legacy.import.v1', { source: 'flat-definitions', definitions: [FLAT] }));
  const { integrity: _i, ...body } = await currentDefinition(scratch.engine.commands, ID);
  const disabled = { ...body, revision: 1, lifecycleState: 'disabled' };
  return world.send(
    envelope('definition.create.v1', { definition: { ...disabled, integrity: integrityOf(disabled) } }),
  );
}

const INITIAL: Record<string, (w: World) => Promise<unknown>> = {
  absent: async () => undefined,
  paused: createPaused,
  active: async (w) => (await createPaused(w), lifecycleCommand(w, 'activate')),
  disabled: async (w) => (await createPaused(w), lifecycleCommand(w, 'disable')),
  tombstoned: async (w) => (await createPaused(w), lifecycleCommand(w, 'tombstone')),
};

/** The reference model's flat-body operations, as the contract's commands that perform them. */
const OPERATION: Record<string, (w: World) => Promise<CommandResponse>> = {
  create_paused: createPaused,
  create_active: async (w) => {
    const paused = await createPaused(w);
    return paused.outcome === 'committed' ? lifecycleCommand(w, 'activate') : paused;
  },
  create_disabled: createDisabled,
  revise_active: (w) => lifecycleCommand(w, 'activate'),
  revise_paused: (w) => lifecycleCommand(w, 'pause'),
  disable: (w) => lifecycleCommand(w, 'disable'),
  tombstone: (w) => lifecycleCommand(w, 'tombstone'),
};

async function stateOf(world: World): Promise<{ state: string; revision: number | null }> {
  const got = await world.send(envelope('definition.get.v1', { automationId: ID }));
  const r = got.result as { lifecycleState?: string; revision?: number } | undefined;
  return r === undefined
    ? { state: 'absent', revision: null }
    : { state: String(r.lifecycleState), revision: r.revision ?? null };
}

/** definition-lifecycle-transitions: from an initial state, one operation; outcome, code, final state, revision. */
export const definitionLifecycleTransitions: CaseRunner = async (c, judge) => {
  const world = caseWorld();
  await INITIAL[String(c.initialState)]!(world);
  const r = await OPERATION[String(c.operation)]!(world);
  const want = c.expected!;
  // A flat DISABLED import is refused inside a whole-import refusal: its code is the failure's.
  const failures = (r.error?.details?.failures ?? []) as Array<{ code: string }>;
  const code = failures[0]?.code ?? r.error?.code;
  judge('outcome', r.outcome === want.outcome, want.outcome, r.outcome);
  if (want.code !== undefined) judge('code', code === want.code, want.code, code);
  const after = await stateOf(world);
  judge('finalState', after.state === want.finalState, want.finalState, after.state);
  if (want.revision !== null && after.revision !== null)
    judge('revision', after.revision === want.revision, want.revision, after.revision);
};
