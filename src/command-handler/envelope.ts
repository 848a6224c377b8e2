import { ContractError, type ErrorEnvelope } from '../contract/errors.js';
import { validateAgainst } from '../contract/schemas.js';
import { SCHEMA_VERSION } from '../contract/vocabulary.js';
import { toPlainJson } from './plain-json.js';
import type { TypedResults } from './command-results.js';

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
 * retries impose; `definition.backfill` plans the slots of a past range that never had an occurrence. The
 * `authority.*` and `approval.*` commands manage the Runtime Authority registry (familiars, runtime
 * capabilities, the service's availability, single-use approvals); `definition.erase`
 * removes a definition's prompt and working directory for good (privacy) and tombstones it; the `acl.*` commands
 * restrict who reads an automation (domain/read-acl.ts); `limits.set` sets the store-wide caps and rate limits
 * (domain/flow-limits.ts).
 */
export const EXTENSION_COMMANDS = [
  'x-coven-automata.definition.reenable.v1',
  'x-coven-automata.definition.unquarantine.v1',
  'x-coven-automata.definition.backfill.v1',
  'x-coven-automata.authority.familiar.register.v1',
  'x-coven-automata.authority.familiar.revoke.v1',
  'x-coven-automata.authority.capabilities.set.v1',
  'x-coven-automata.authority.availability.set.v1',
  'x-coven-automata.approval.grant.v1',
  'x-coven-automata.approval.expire.v1',
  'x-coven-automata.definition.erase.v1',
  'x-coven-automata.acl.grant.v1',
  'x-coven-automata.acl.revoke.v1',
  'x-coven-automata.acl.lift.v1',
  'x-coven-automata.limits.set.v1',
] as const;

/**
 * Upstream's versioned read-only diagnostics outside the contract's 19 (its command matrix names them): answered
 * like the contract's reads, `committed` with the adoption key echoed and never stored.
 */
export const DIAGNOSTIC_COMMANDS = [
  'occurrence.list.v1',
  'occurrence.get.v1',
  'occurrence.history.v1',
  'run.get.v1',
  'receipt.get.v1',
  'scheduler.status.v1',
] as const;

/**
 * Reads this engine adds under its own namespace: `run.output` answers what an attempt's session printed (the
 * CLI's `logs`), judged by the read ACL like `run.get.v1` and answered from the runtime's evidence; `limits.get`
 * answers the store-wide limits and what each gate holds (the CLI's `limits`).
 */
export const EXTENSION_READS = ['x-coven-automata.run.output.v1', 'x-coven-automata.limits.get.v1'] as const;

export type ContractCommand = (typeof CONTRACT_COMMANDS)[number];
export type DiagnosticCommand = (typeof DIAGNOSTIC_COMMANDS)[number];
export type CommandName =
  ContractCommand | (typeof EXTENSION_COMMANDS)[number] | DiagnosticCommand | (typeof EXTENSION_READS)[number];

/**
 * The result each command answers with. Commands whose answer this engine has not given a named shape (the
 * import report, receipt and scheduler diagnostics, the registry extensions) answer a plain object.
 */
export type CommandResults = TypedResults & {
  [C in Exclude<CommandName, keyof TypedResults>]: Record<string, unknown>;
};

/**
 * The result type of command `C`; a plain object when `C` is not one known command (a union of names, or any
 * name), since the answer then cannot be told apart by its type.
 */
export type ResultOf<C extends string> = string extends C
  ? Record<string, unknown>
  : [C] extends [CommandName]
    ? IsUnion<C> extends true
      ? Record<string, unknown>
      : CommandResults[C]
    : Record<string, unknown>;

type IsUnion<T, U = T> = T extends unknown ? ([U] extends [T] ? false : true) : never;

/** Commands that only read: answered `committed`, their adoption key echoed and never stored. */
export const QUERY_COMMANDS: ReadonlySet<CommandName> = new Set([
  'definition.list.v1',
  'definition.get.v1',
  'definition.health.v1',
  'run.history.v1',
  'events.read.v1',
  'events.subscribe.v1',
  ...DIAGNOSTIC_COMMANDS,
  ...EXTENSION_READS,
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

/** The contract's error envelope as a response carries it, with the adoption conflict it names, if any. */
export type CommandError = ErrorEnvelope & { adoption?: { key: string; conflictOutcome?: 'committed' | 'rejected' } };

interface ResponseFields {
  schemaVersion: typeof SCHEMA_VERSION;
  adoptionKey: string;
  revision?: number;
  receiptRef?: string;
  eventRef?: { stream: string; sequence: number };
}

/** A command that committed now: its `result` is the command's, typed by {@link ResultOf}. */
export interface CommittedResponse<C extends string = CommandName> extends ResponseFields {
  command: C;
  outcome: 'committed';
  result: ResultOf<C>;
  replay?: undefined;
  error?: undefined;
}

/** A repeat of a committed command's adoption key and request: the first commit's result, replayed. */
export interface ReplayedResponse<C extends string = CommandName> extends ResponseFields {
  command: C;
  outcome: 'replayed';
  replay: { firstCommittedAt: string };
  result: ResultOf<C>;
  error?: undefined;
}

/** A refused command: nothing was written (but see CANCEL_PENDING); `command` is `unknown` when unreadable. */
export interface RejectedResponse extends ResponseFields {
  command: string;
  outcome: 'rejected';
  error: CommandError;
  result?: undefined;
  replay?: undefined;
}

/**
 * Every answer of the command handler, as command-response.schema.json has it on the wire: narrowed by
 * `outcome`, so a rejection's `error` and a commit's `result` need no check or cast.
 *
 * @example
 * ```ts
 * const response = await engine.commands.handle(envelope);
 * if (response.outcome === 'rejected') console.error(response.error.code, response.error.message);
 * else console.log(response.result);
 * ```
 */
export type CommandResponse<C extends string = CommandName> =
  CommittedResponse<C> | ReplayedResponse<C> | RejectedResponse;

/** A command envelope naming one command, so the handler's answer is typed by that command's result. */
export type TypedCommandEnvelope<C extends CommandName> = Omit<CommandEnvelope, 'command'> & { command: C };

export { MAX_COMMAND_BYTES, MAX_NESTING_DEPTH } from './plain-json.js';

function reject(
  code: 'VALIDATION_FAILED' | 'SCHEMA_VERSION_UNSUPPORTED',
  message: string,
  details?: Record<string, unknown>,
): never {
  throw new ContractError(code, message, details);
}

/**
 * The one boundary where untrusted input becomes a typed command: {@link toPlainJson} (size, depth, JSON
 * syntax, a guarded copy of anything that is not text), then the schema version, then the envelope schema
 * (closed objects, the command's payload, expectedRevision rules). Throws a ContractError and nothing
 * else, whatever the input; never returns a half-valid value.
 */
export function decodeCommand(raw: unknown): CommandEnvelope {
  return checkEnvelope(toPlainJson(raw));
}

/** The schema version and envelope checks of {@link decodeCommand}, on input that is already plain JSON. */
export function checkEnvelope(value: unknown): CommandEnvelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    reject('VALIDATION_FAILED', 'command must be a JSON object');
  const version = (value as { schemaVersion?: unknown }).schemaVersion;
  if (version !== undefined && version !== SCHEMA_VERSION) {
    const shown = JSON.stringify(version).slice(0, 100);
    reject(
      'SCHEMA_VERSION_UNSUPPORTED',
      `schemaVersion ${shown} is not supported; this engine speaks ${SCHEMA_VERSION}`,
      {
        schemaVersion: typeof version === 'string' ? version.slice(0, 100) : shown,
        supported: [SCHEMA_VERSION],
      },
    );
  }
  const verdict = validateAgainst('command-envelope.schema.json', value);
  if (!verdict.valid)
    reject('VALIDATION_FAILED', `command envelope is invalid: ${verdict.problems.slice(0, 5).join('; ')}`, {
      problems: verdict.problems.slice(0, 50),
    });
  return value as CommandEnvelope;
}

/**
 * Best-effort command name and key of undecodable input, so even a rejection names what it refused. Only
 * ever given plain JSON data (the output of {@link toPlainJson}), never the caller's live value.
 */
export function peekIdentity(value: unknown): { command: string; adoptionKey: string } {
  const record =
    typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const command =
    typeof record.command === 'string' && record.command.length > 0 && record.command.length <= 64
      ? record.command
      : 'unknown';
  const adoptionKey =
    typeof record.adoptionKey === 'string' && record.adoptionKey.length <= 200 ? record.adoptionKey : '';
  return { command, adoptionKey };
}
