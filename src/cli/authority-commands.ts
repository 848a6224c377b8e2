import { DefinitionState } from '../../machines/index.js';
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { CliError, envelope, report, withEngine, type CliEngine } from './context.js';
import type { ProgramKit } from './program-kit.js';

/** A positive whole number of minutes, or a usage error naming the option. */
function wholeMinutes(text: string): number {
  const minutes = Number(text);
  if (!Number.isSafeInteger(minutes) || minutes < 1)
    throw new CliError(`--ttl-minutes takes a whole number of minutes, not ${JSON.stringify(text)}`);
  return minutes;
}

const withReason = (reason: string | undefined) => (reason === undefined ? {} : { reason });

/** The revision erase must name while the definition is live; none once it is tombstoned or unknown. */
async function liveRevision(engine: CliEngine, automationId: string): Promise<number | undefined> {
  const got = await engine.commands.handle(envelope('definition.get.v1', { automationId }));
  if (got.outcome === 'rejected') return undefined;
  return got.result?.lifecycleState === DefinitionState.tombstoned
    ? undefined
    : (got.result?.currentRevision as number);
}

/** One subcommand of `group` that sends one command built from its arguments and options. */
function sender<A extends unknown[]>(
  { opts, run }: ProgramKit,
  command: Command,
  build: (engine: CliEngine, ...args: A) => Promise<Record<string, unknown>>,
  human: (result: Record<string, unknown>, ...args: A) => string,
): Command {
  return command.action(
    run(async (...args: A) =>
      withEngine(opts(), async (engine) =>
        report(await engine.commands.handle(await build(engine, ...args)), opts(), (r) => human(r, ...args)),
      ),
    ),
  );
}

/** `familiar register|revoke`, `capabilities`, `authority-availability`: the runtime authority registry. */
function registerRegistryCommands(kit: ProgramKit): void {
  const familiar = kit.program.command('familiar').description('the familiar registry (runtime authority)');
  for (const [verb, command] of [
    ['register', 'x-coven-automata.authority.familiar.register.v1'],
    ['revoke', 'x-coven-automata.authority.familiar.revoke.v1'],
  ] as const)
    sender(
      kit,
      familiar.command(`${verb} <familiarId>`).description(command).option('--reason <text>', 'why'),
      async (_e, familiarId: string, cmd: { reason?: string }) =>
        envelope(command, { familiarId, ...withReason(cmd.reason) }),
      (r, familiarId: string) =>
        `familiar ${familiarId}: revision ${String(r.revision)}${r.revoked === true ? ', revoked' : ''}`,
    );
  sender(
    kit,
    kit.program
      .command('capabilities <runtimeId> [capabilities...]')
      .description('set the capabilities a runtime holds (x-coven-automata.authority.capabilities.set.v1)'),
    async (_e, runtimeId: string, capabilities: string[]) =>
      envelope('x-coven-automata.authority.capabilities.set.v1', { runtimeId, capabilities }),
    (_r, runtimeId: string, capabilities: string[]) => `${runtimeId}: ${capabilities.join(', ') || '(none)'}`,
  );
  sender(
    kit,
    kit.program
      .command('authority-availability <state>')
      .description('mark the authority source available or unavailable (dispatch of bound runs fails closed)')
      .option('--reason <text>', 'why'),
    async (_e, state: string, cmd: { reason?: string }) => {
      if (state !== 'available' && state !== 'unavailable')
        throw new CliError(`authority-availability takes available or unavailable, not ${JSON.stringify(state)}`);
      return envelope('x-coven-automata.authority.availability.set.v1', {
        available: state === 'available',
        ...withReason(cmd.reason),
      });
    },
    (_r, state: string) => `authority ${state === 'available' ? 'available' : 'unavailable'}`,
  );
}

/** `approval grant|expire`: single-use approvals scoped to one automation. */
function registerApprovalCommands(kit: ProgramKit): void {
  const approval = kit.program.command('approval').description('single-use approvals for bound automations');
  sender(
    kit,
    approval
      .command('grant <automationId>')
      .description('grant one approval (x-coven-automata.approval.grant.v1)')
      .option('--nonce <nonce>', 'the nonce the binding expects (default: a new random one, printed)')
      .option('--ttl-minutes <n>', 'how long the approval stays usable', '60'),
    async (_e, automationId: string, cmd: { nonce?: string; ttlMinutes: string }) =>
      envelope('x-coven-automata.approval.grant.v1', {
        automationId,
        nonce: cmd.nonce ?? randomUUID(),
        ttlMinutes: wholeMinutes(cmd.ttlMinutes),
      }),
    (r, automationId: string) =>
      `approval ${String(r.nonce)} for ${automationId}, usable once until ${String(r.expiresAt)}`,
  );
  sender(
    kit,
    approval
      .command('expire')
      .description('end open approvals now (x-coven-automata.approval.expire.v1)')
      .option('--automation <automationId>', 'only this automation')
      .option('--nonce <nonce>', 'only this approval')
      .option('--reason <text>', 'why'),
    async (_e, cmd: { automation?: string; nonce?: string; reason?: string }) =>
      envelope('x-coven-automata.approval.expire.v1', {
        ...(cmd.automation === undefined ? {} : { automationId: cmd.automation }),
        ...(cmd.nonce === undefined ? {} : { nonce: cmd.nonce }),
        ...withReason(cmd.reason),
      }),
    (r) => `approvals expired: ${(r.expired as string[] | undefined)?.join(', ') || 'none open'}`,
  );
}

/** `acl grant|revoke|lift` and `erase`: the read ACL and erasure (privacy). */
function registerPrivacyCommands(kit: ProgramKit): void {
  const acl = kit.program.command('acl').description("an automation's read access list");
  for (const verb of ['grant', 'revoke'] as const)
    sender(
      kit,
      acl.command(`${verb} <automationId> <principalId>`).description(`x-coven-automata.acl.${verb}.v1`),
      async (_e, automationId: string, principalId: string) =>
        envelope(`x-coven-automata.acl.${verb}.v1`, { automationId, principalId }),
      (r, automationId: string) =>
        `${automationId}: reads restricted to ${(r.readers as string[]).join(', ') || 'the operator and its binding'}`,
    );
  sender(
    kit,
    acl.command('lift <automationId>').description('make the automation readable by all again'),
    async (_e, automationId: string) => envelope('x-coven-automata.acl.lift.v1', { automationId }),
    (_r, automationId: string) => `${automationId}: readable by all`,
  );
  sender(
    kit,
    kit.program
      .command('erase <automationId>')
      .description('tombstone a definition and erase its prompt and working directory (ids, history, receipts kept)')
      .option('--reason <text>', 'why'),
    async (engine, automationId: string, cmd: { reason?: string }) =>
      envelope(
        'x-coven-automata.definition.erase.v1',
        { automationId, ...withReason(cmd.reason) },
        await liveRevision(engine, automationId),
      ),
    (_r, automationId: string) => `${automationId}: erased`,
  );
}

/** The runtime authority registry, approvals, the read ACL and erasure, as CLI verbs over their commands. */
export function registerAuthorityCommands(kit: ProgramKit): void {
  registerRegistryCommands(kit);
  registerApprovalCommands(kit);
  registerPrivacyCommands(kit);
}
