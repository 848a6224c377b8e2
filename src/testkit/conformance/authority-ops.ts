import { DefinitionState } from '../../../machines/index.js';
import type { CommandHandler } from '../../command-handler/command-handler.js';
import type { CommandResponse } from '../../command-handler/envelope.js';
import { integrityOf } from '../../contract/digest.js';
import { AUTHORITY_EXTENSION, bindingOf, type AuthorityBinding } from '../../domain/authority.js';

/**
 * What the conformance runner hands each authority/privacy op: its engine's command handler, its virtual
 * clock, and (optionally) where notes go. Every op goes through the engine's own commands, nothing else.
 */
export interface AuthorityOpsHandle {
  engine: { commands: CommandHandler };
  clock: { set(at: string): void };
  notes?: string[];
}

type Op = Record<string, unknown>;
let counter = 0;

function envelope(name: string, payload: Record<string, unknown>, expectedRevision?: number) {
  return {
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: `conformance-authority-${String(++counter).padStart(6, '0')}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: 'conformance-runner' }, channel: 'cli' },
    intent: { statement: `conformance ${name}` },
    payload,
  };
}

const at = (handle: AuthorityOpsHandle, op: Op) => {
  if (typeof op.at === 'string') handle.clock.set(op.at);
};

async function definitionOf(handle: AuthorityOpsHandle, automationId: string) {
  const got = await handle.engine.commands.handle(envelope('definition.get.v1', { automationId }));
  return got.result?.definition as Record<string, unknown> | undefined;
}

async function boundTo(handle: AuthorityOpsHandle, automationId: string): Promise<AuthorityBinding | undefined> {
  const definition = await definitionOf(handle, automationId);
  return definition === undefined ? undefined : bindingOf(definition);
}

/**
 * Binds each vector binding to its definition (a revision carrying the coven.automations.authority.v1
 * extension, in the definition's current lifecycle state), registers each bound familiar (revision 1, a
 * newly registered familiar's first) and gives each bound runtime the capabilities its bindings require — the
 * state at decision time, which later ops change.
 */
export async function applyBindings(handle: AuthorityOpsHandle, bindings: Op[]): Promise<CommandResponse[]> {
  const answers: CommandResponse[] = [];
  const familiars = new Set(bindings.map((b) => String(b.familiarId)));
  for (const familiarId of familiars)
    answers.push(
      await handle.engine.commands.handle(envelope('x-coven-automata.authority.familiar.register.v1', { familiarId })),
    );
  const runtimes = new Map<string, Set<string>>();
  for (const b of bindings)
    for (const c of (b.requiredCapabilities as string[] | undefined) ?? [])
      runtimes.set(String(b.runtime), (runtimes.get(String(b.runtime)) ?? new Set()).add(c));
  for (const [runtimeId, capabilities] of runtimes)
    answers.push(
      await handle.engine.commands.handle(
        envelope('x-coven-automata.authority.capabilities.set.v1', { runtimeId, capabilities: [...capabilities] }),
      ),
    );
  for (const b of bindings) answers.push(await bindDefinition(handle, b));
  return answers;
}

async function bindDefinition(handle: AuthorityOpsHandle, binding: Op): Promise<CommandResponse> {
  const automationId = String(binding.automationId);
  const current = structuredClone((await definitionOf(handle, automationId)) ?? {});
  const { integrity: _old, ...body } = current;
  const revision = Number(body.revision);
  body.revision = revision + 1;
  body.extensions = { ...(body.extensions as Record<string, unknown> | undefined), [AUTHORITY_EXTENSION]: binding };
  (body.binding as Record<string, unknown>).familiarId = binding.familiarId;
  if (body.lifecycleState === DefinitionState.draft) body.lifecycleState = DefinitionState.paused;
  return handle.engine.commands.handle(
    envelope('definition.revise.v1', { definition: { ...body, integrity: integrityOf(body) } }, revision),
  );
}

/** grantApproval {automationId, nonce, ttlMinutes, at?}: one single-use approval for that automation. */
export async function grantApproval(handle: AuthorityOpsHandle, op: Op): Promise<CommandResponse> {
  at(handle, op);
  return handle.engine.commands.handle(
    envelope('x-coven-automata.approval.grant.v1', {
      automationId: op.automationId,
      nonce: op.nonce,
      ttlMinutes: op.ttlMinutes,
    }),
  );
}

/** expireApprovals {automationId?, nonce?, at?}: every open approval (of that automation, or that nonce) ends now. */
export async function expireApprovals(handle: AuthorityOpsHandle, op: Op): Promise<CommandResponse> {
  at(handle, op);
  return handle.engine.commands.handle(
    envelope('x-coven-automata.approval.expire.v1', {
      ...(typeof op.automationId === 'string' ? { automationId: op.automationId } : {}),
      ...(typeof op.nonce === 'string' ? { nonce: op.nonce } : {}),
    }),
  );
}

/** revokeFamiliar {automationId | familiarId}: revokes the named familiar, or the one the automation binds. */
export async function revokeFamiliar(handle: AuthorityOpsHandle, op: Op): Promise<CommandResponse> {
  at(handle, op);
  const familiarId =
    typeof op.familiarId === 'string' ? op.familiarId : (await boundTo(handle, String(op.automationId)))?.familiarId;
  return handle.engine.commands.handle(
    envelope('x-coven-automata.authority.familiar.revoke.v1', { familiarId: familiarId ?? String(op.automationId) }),
  );
}

/** setRuntimeCapabilities {automationId | runtimeId, capabilities}: what that runtime holds from now on. */
export async function setRuntimeCapabilities(handle: AuthorityOpsHandle, op: Op): Promise<CommandResponse> {
  at(handle, op);
  const runtimeId =
    typeof op.runtimeId === 'string' ? op.runtimeId : (await boundTo(handle, String(op.automationId)))?.runtime;
  return handle.engine.commands.handle(
    envelope('x-coven-automata.authority.capabilities.set.v1', {
      runtimeId: runtimeId ?? 'coven-code',
      capabilities: op.capabilities,
    }),
  );
}

/** setAuthority {available}: the authority service's availability; unavailable fails every bound dispatch closed. */
export async function setAuthority(handle: AuthorityOpsHandle, op: Op): Promise<CommandResponse> {
  at(handle, op);
  return handle.engine.commands.handle(
    envelope('x-coven-automata.authority.availability.set.v1', { available: op.available !== false }),
  );
}

/** erase {automationId, at?}: x-coven-automata.definition.erase.v1 at the definition's current revision. */
export async function erase(handle: AuthorityOpsHandle, op: Op): Promise<CommandResponse> {
  at(handle, op);
  const automationId = String(op.automationId);
  const current = await definitionOf(handle, automationId);
  const live = current !== undefined && current.deletion === undefined;
  return handle.engine.commands.handle(
    envelope('x-coven-automata.definition.erase.v1', { automationId }, live ? Number(current.revision) : undefined),
  );
}
