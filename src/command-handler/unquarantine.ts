import { ContractError } from '../contract/errors.js';
import { moveQuarantine } from '../domain/quarantine.js';
import { isQuarantined, readDefinitionRecord } from '../domain/services.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { commandStep } from './operator-lookups.js';

/** Lifts a quarantine (engine extension): planning, claims and manual runs resume. */
export async function unquarantine(ctx: CommandContext): Promise<CommandOutcome> {
  const automationId = ctx.envelope.payload.automationId as string;
  await readDefinitionRecord(ctx.tx, automationId);
  if (!(await isQuarantined(ctx.tx, automationId)))
    throw new ContractError('ILLEGAL_TRANSITION', `definition ${automationId} is not quarantined`, { automationId });
  const before = await moveQuarantine(commandStep(ctx), automationId, {
    type: 'quarantine_lifted',
    actor: 'command_handler',
  });
  return {
    automationId,
    result: { automationId, quarantined: false, quarantinedSince: before.since, reason: before.reason },
  };
}
