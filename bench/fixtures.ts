// What every bench cell builds on: a definition body and a command sender that fails loudly.
import { integrityOf } from '../src/contract/digest.js';
import type { CommandResponse } from '../src/command-handler/envelope.js';
import type { Engine } from '../src/engine/engine.js';

/** A valid definition, due at every instant `rrule` names (UTC), with one attempt and no overlap. */
export function definition(
  automationId: string,
  revision: number,
  lifecycleState: 'draft' | 'paused',
  rrule: string,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    schemaVersion: 'coven.automations.v1',
    automationId,
    revision,
    lifecycleState,
    display: { name: automationId },
    trigger: { variant: 'schedule', version: 1, schedule: { rrule, timezone: 'utc' } },
    conditions: [],
    action: { variant: 'familiarInvocation', version: 1, prompt: `bench ${automationId}` },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: 'charm',
      authority: { approvalPolicyRef: 'policy://bench' },
    },
    runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
    policies: {
      timeout: { perRunMinutes: 30 },
      retry: { maxAttempts: 1, backoffPolicy: 'none' },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
    provenance: { createdBy: { principalId: 'principal:bench' } },
  };
  return { ...body, integrity: integrityOf(body) };
}

let keys = 0;

/** Sends one command with a fresh adoption key; answers the response (rejections included). */
export function send(
  engine: Engine,
  name: string,
  payload: Record<string, unknown>,
  expectedRevision?: number,
): Promise<CommandResponse> {
  return engine.commands.handle({
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: `bench-key-${String(++keys).padStart(8, '0')}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: 'principal:bench' }, channel: 'cli' },
    intent: { statement: 'bench' },
    payload,
  });
}

/** Sends one command and throws on a rejection: set-up steps must not fail quietly. */
export async function command(
  engine: Engine,
  name: string,
  payload: Record<string, unknown>,
  expectedRevision?: number,
): Promise<void> {
  const response = await send(engine, name, payload, expectedRevision);
  if (response.outcome === 'rejected') throw new Error(`${name}: ${response.error!.code} ${response.error!.message}`);
}
