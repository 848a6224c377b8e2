import { ContractError, type ErrorEnvelope } from '../contract/errors.js';
import { validateAgainst } from '../contract/schemas.js';
import { SCHEMA_VERSION } from '../contract/vocabulary.js';

/** The 19 versioned commands of coven.automations.v1. */
export const CONTRACT_COMMANDS = [
  'definition.create.v1',
  'definition.revise.v1',
  'definition.activate.v1',
  'definition.pause.v1',
  'definition.disable.v1',
  'definition.tombstone.v1',
  'definition.list.v1',
  'definition.get.v1',
  'definition.health.v1',
  'occurrence.runNow.v1',
  'occurrence.cancel.v1',
  'occurrence.recover.v1',
  'run.cancel.v1',
  'run.history.v1',
  'attempt.cancel.v1',
  'attempt.retry.v1',
  'events.read.v1',
  'events.subscribe.v1',
  'legacy.import.v1',
] as const;

/**
 * Commands this engine adds outside the contract's 19, under its own namespace so no contract client
 * mistakes them for v1 commands. `definition.reenable` commits the contract's `disabled → paused`
 * transition, which no v1 command reaches; `definition.unquarantine` lifts the quarantine that exhausted
 * retries impose.
 */
export const EXTENSION_COMMANDS = ['x-coven-automata.definition.reenable.v1', 'x-coven-automata.definition.unquarantine.v1'] as const;

export type ContractCommand = (typeof CONTRACT_COMMANDS)[number];
export type CommandName = ContractCommand | (typeof EXTENSION_COMMANDS)[number];

/** Commands that only read: answered `committed`, their adoption key echoed and never stored. */
export const QUERY_COMMANDS: ReadonlySet<CommandName> = new Set([
  'definition.list.v1',
  'definition.get.v1',
  'definition.health.v1',
  'run.history.v1',
  'events.read.v1',
  'events.subscribe.v1',
]);

export interface CommandEnvelope {
  schemaVersion: typeof SCHEMA_VERSION;
  command: CommandName;
  adoptionKey: string;
  expectedRevision?: number;
  origin: {
    principal: { principalId: string; displayName?: string };
    channel: 'daemon-ipc' | 'http' | 'control-action' | 'cli' | 'sdk' | 'cave';
    authenticationClass?: string;
    requestedAt?: string;
    correlationId?: string;
  };
  intent: { statement: string };
  payload: Record<string, unknown>;
}

export interface CommandResponse {
  schemaVersion: typeof SCHEMA_VERSION;
  command: string;
  adoptionKey: string;
  outcome: 'committed' | 'replayed' | 'rejected';
  replay?: { firstCommittedAt: string };
  revision?: number;
  result?: Record<string, unknown>;
  error?: ErrorEnvelope & { adoption?: { key: string; conflictOutcome?: 'committed' | 'rejected' } };
  receiptRef?: string;
  eventRef?: { stream: string; sequence: number };
}

/** Largest accepted command, in UTF-8 bytes: a definition's prompt may be 100k characters. */
export const MAX_COMMAND_BYTES = 1_048_576;

function reject(code: 'VALIDATION_FAILED' | 'SCHEMA_VERSION_UNSUPPORTED' | 'PAYLOAD_TOO_LARGE', message: string, details?: Record<string, unknown>): never {
  throw new ContractError(code, message, details);
}

/**
 * The one boundary where untrusted input becomes a typed command: size, JSON syntax, schema version, then
 * the envelope schema (closed objects, the command's payload, expectedRevision rules). Throws a
 * ContractError; never returns a half-valid value.
 */
export function decodeCommand(raw: unknown): CommandEnvelope {
  let value = raw;
  if (typeof raw === 'string' || raw instanceof Uint8Array) {
    const size = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.byteLength;
    if (size > MAX_COMMAND_BYTES) reject('PAYLOAD_TOO_LARGE', `command is ${size} bytes; the limit is ${MAX_COMMAND_BYTES}`, { size, limit: MAX_COMMAND_BYTES });
    const text = typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8');
    try {
      value = JSON.parse(text);
    } catch (error) {
      reject('VALIDATION_FAILED', `command is not valid JSON: ${(error as Error).message}`);
    }
  } else {
    let text: string | undefined;
    try {
      text = JSON.stringify(raw);
    } catch (error) {
      reject('VALIDATION_FAILED', `command is not JSON-serialisable: ${(error as Error).message}`);
    }
    const size = text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
    if (size > MAX_COMMAND_BYTES) reject('PAYLOAD_TOO_LARGE', `command is ${size} bytes; the limit is ${MAX_COMMAND_BYTES}`, { size, limit: MAX_COMMAND_BYTES });
    value = text === undefined ? undefined : JSON.parse(text);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) reject('VALIDATION_FAILED', 'command must be a JSON object');
  const version = (value as { schemaVersion?: unknown }).schemaVersion;
  if (version !== undefined && version !== SCHEMA_VERSION) {
    reject('SCHEMA_VERSION_UNSUPPORTED', `schemaVersion ${JSON.stringify(version)} is not supported; this engine speaks ${SCHEMA_VERSION}`, {
      schemaVersion: version,
      supported: [SCHEMA_VERSION],
    });
  }
  const verdict = validateAgainst('command-envelope.schema.json', value);
  if (!verdict.valid) reject('VALIDATION_FAILED', `command envelope is invalid: ${verdict.problems.slice(0, 5).join('; ')}`, { problems: verdict.problems.slice(0, 50) });
  return value as CommandEnvelope;
}

/** Best-effort command name and key of undecodable input, so even a rejection names what it refused. */
export function peekIdentity(raw: unknown): { command: string; adoptionKey: string } {
  let value: unknown = raw;
  if (typeof raw === 'string' && Buffer.byteLength(raw, 'utf8') <= MAX_COMMAND_BYTES) {
    try {
      value = JSON.parse(raw);
    } catch {
      value = undefined;
    }
  }
  const record = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const command = typeof record.command === 'string' && record.command.length > 0 && record.command.length <= 64 ? record.command : 'unknown';
  const adoptionKey = typeof record.adoptionKey === 'string' && record.adoptionKey.length <= 200 ? record.adoptionKey : '';
  return { command, adoptionKey };
}
