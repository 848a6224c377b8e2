import { integrityOf } from '../contract/digest.js';
import { checkDefinitionBody, type AutomationDefinition } from '../domain/definition-body.js';
import type { RetentionClass } from '../retention/policy.js';
import { FunctionRuntime, type FunctionResult } from '../runtime/function-runtime.js';
import type { LaunchRequest } from '../runtime/runtime.js';
import { parseRrule } from '../schedule/rrule.js';
import { LIMITS_EXTENSION, type LimitsExtension } from '../domain/flow-limits.js';
import { extensionTrigger, SCHEDULE_EXTENSION } from '../schedule/schedule-extension.js';

/** The approval policy a built definition binds unless it names its own. */
export const EMBEDDED_APPROVAL_POLICY = 'policy://coven-automata/embedded';

/**
 * A schedule: an RFC 5545 RRULE (in UTC), a rule with the IANA time zone it is read in (and optionally its
 * `dtstart` and `exdate`), or a 5-field cron expression in a zone. A rule the contract's v1 trigger carries
 * (`FREQ=DAILY|WEEKLY`, `BYHOUR`, `BYDAY`) is put there, so any v1 engine runs it; anything else goes in the
 * `x-coven-automata.schedule.v1` extension (docs/schedules.md).
 */
export type ScheduleSpec =
  | string
  | { rrule: string; timezone?: string; dtstart?: string; exdate?: string[] }
  | { cron: string; timezone?: string; exdate?: string[] };

/** What every built automation may say besides its id, schedule and work; everything has a default. */
export interface AutomationOptions {
  /** Shown in lists; defaults to the id. */
  name?: string;
  description?: string;
  tags?: string[];
  /** The familiar the definition binds; defaults to the runtime's id. */
  familiar?: string;
  /** The approval policy reference of its authority binding; defaults to {@link EMBEDDED_APPROVAL_POLICY}. */
  approvalPolicy?: string;
  /** The working folder a child-process runtime starts in (relative to its roots). */
  cwd?: string;
  model?: string;
  /** Capabilities the runtime must hold (Runtime Authority); none by default. */
  capabilities?: string[];
  /** A run's deadline, in minutes; 30 by default. */
  timeoutMinutes?: number;
  /** Retries of pre-ownership failures; none by default. */
  retry?: AutomationDefinition['policies']['retry'];
  /** A file the run's output is delivered to, atomically, under the engine's delivery root. */
  outputTarget?: string;
  /** How long settled history is kept; `standard` (30 days) by default. */
  retention?: RetentionClass;
  /** The principal recorded as the definition's creator; `sdk` by default. */
  createdBy?: string;
  /**
   * Flow control (x-coven-automata.limits.v1, docs/flow-control.md): the tags whose store-wide caps and rate limits
   * its runs count against, its priority among work waiting at a limit, and a rate limit of its own.
   */
  limits?: LimitsExtension;
}

/** An automation that asks a registered runtime to run a prompt. */
export interface AutomationSpec extends AutomationOptions {
  /** The automation id: letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
  id: string;
  schedule: ScheduleSpec;
  /** What the runtime is asked to do. */
  prompt: string;
  /** The id of the runtime that runs it (a `FunctionRuntime`, `ChildProcessRuntime`, ... given to the engine). */
  runtime: string;
}

/** What a function automation's handler may return: nothing or text (success, that text its output), or a result. */
export type HandlerResult = void | string | FunctionResult;

/** An automation whose work is a function of this process. */
export interface FunctionAutomationSpec extends AutomationOptions {
  id: string;
  schedule: ScheduleSpec;
  /** Runs each attempt; a throw fails the attempt. */
  handler: (request: LaunchRequest, signal: AbortSignal) => Promise<HandlerResult>;
  /** Given to the handler as `request.prompt`; defaults to the name. */
  prompt?: string;
  /** The id of the runtime built for the handler; `fn.<id>` by default. */
  runtime?: string;
}

/** A built function automation: its definition and the runtime to give the engine. */
export interface FunctionAutomation {
  definition: AutomationDefinition;
  runtime: FunctionRuntime;
}

/** The trigger, and the schedule extension when the contract's trigger cannot carry the schedule alone. */
function scheduleOf(spec: ScheduleSpec): Pick<AutomationDefinition, 'trigger' | 'extensions'> {
  const schedule = typeof spec === 'string' ? { rrule: spec } : spec;
  const timezone = schedule.timezone ?? 'utc';
  if (
    'rrule' in schedule &&
    schedule.dtstart === undefined &&
    schedule.exdate === undefined &&
    isV1Rule(schedule.rrule)
  )
    return { trigger: { variant: 'schedule', version: 1, schedule: { rrule: schedule.rrule, timezone } } };
  const extension = Object.fromEntries(Object.entries({ ...schedule, timezone }).filter(([, v]) => v !== undefined));
  return { trigger: extensionTrigger(timezone), extensions: { [SCHEDULE_EXTENSION]: extension } };
}

/** The trigger and extensions, with the limits extension beside the schedule's when there are limits. */
function withLimits(
  scheduled: Pick<AutomationDefinition, 'trigger' | 'extensions'>,
  limits: LimitsExtension | undefined,
): Pick<AutomationDefinition, 'trigger' | 'extensions'> {
  if (limits === undefined) return scheduled;
  return { ...scheduled, extensions: { ...scheduled.extensions, [LIMITS_EXTENSION]: limits } };
}

function isV1Rule(rrule: string): boolean {
  try {
    parseRrule(rrule);
    return true;
  } catch {
    return false;
  }
}

/** The body before its digest: every field the contract requires, from the spec and the defaults. */
function bodyOf(spec: AutomationSpec): Omit<AutomationDefinition, 'integrity'> {
  const display = {
    name: spec.name ?? spec.id,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    ...(spec.tags === undefined ? {} : { tags: spec.tags }),
  };
  return {
    schemaVersion: 'coven.automations.v1',
    automationId: spec.id,
    revision: 1,
    lifecycleState: 'draft',
    display,
    ...withLimits(scheduleOf(spec.schedule), spec.limits),
    action: {
      variant: 'familiarInvocation',
      version: 1,
      prompt: spec.prompt,
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: spec.familiar ?? spec.runtime,
      authority: { approvalPolicyRef: spec.approvalPolicy ?? EMBEDDED_APPROVAL_POLICY },
    },
    runtimeRequirements: {
      runtimeId: spec.runtime,
      capabilities: spec.capabilities ?? [],
      ...(spec.model === undefined ? {} : { model: spec.model }),
    },
    policies: {
      timeout: { perRunMinutes: spec.timeoutMinutes ?? 30 },
      retry: spec.retry ?? { maxAttempts: 1, backoffPolicy: 'none' },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      ...(spec.outputTarget === undefined ? {} : { delivery: { outputTarget: spec.outputTarget, mode: 'atomic' } }),
      retention: { occurrenceHistory: { classification: spec.retention ?? 'standard' } },
    },
    provenance: { createdBy: { principalId: spec.createdBy ?? 'sdk' } },
  };
}

/**
 * A complete, valid `coven.automations.v1` definition from the few fields that matter: revision 1 in `draft` (as
 * `definition.create.v1` takes it), the contract's defaults for the rest (no overlap, the latest missed slot, no
 * retries, 30-minute runs), and its integrity digest computed. Checked as the command handler checks it, so a bad
 * id, rule or time zone throws a `ContractError` (`VALIDATION_FAILED` or `CAPABILITY_UNSUPPORTED`) here, not later.
 *
 * @example
 * ```ts
 * import { defineAutomation } from 'coven-automata';
 *
 * const definition = defineAutomation({
 *   id: 'daily-notes',
 *   schedule: { rrule: 'FREQ=DAILY;BYHOUR=9', timezone: 'Europe/Berlin' },
 *   prompt: 'Write the daily notes.',
 *   runtime: 'coven-code',
 * });
 * const quarterHourly = defineAutomation({
 *   id: 'quarter-hour-notes',
 *   schedule: { cron: '*\/15 * * * *', timezone: 'Europe/Berlin' },
 *   prompt: 'Jot down what changed.',
 *   runtime: 'coven-code',
 *   limits: { tags: ['notes'], priority: 5, rate: { limit: 4, perMinutes: 60 } },
 * });
 * ```
 */
export function defineAutomation(spec: AutomationSpec): AutomationDefinition {
  const body = bodyOf(spec);
  const definition = { ...body, integrity: integrityOf(body as Record<string, unknown>) };
  return checkDefinitionBody(definition, 'definition');
}

/** A handler's answer as the function runtime takes it. */
function resultOf(value: HandlerResult): FunctionResult {
  if (value === undefined) return { outcome: 'succeeded' };
  if (typeof value === 'string') return { outcome: 'succeeded', output: value };
  return value;
}

/**
 * An automation whose work is a function of this process: its definition (as {@link defineAutomation} builds it)
 * and a `FunctionRuntime` that runs the handler, to give the engine. The handler's returned text is the run's
 * output; a throw fails the attempt.
 *
 * @example
 * ```ts
 * import { createEngine, defineFunctionAutomation, MemoryStore } from 'coven-automata';
 *
 * const digest = defineFunctionAutomation({
 *   id: 'morning-digest',
 *   schedule: 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=7',
 *   handler: async (request) => `digest for ${request.occurrenceId}`,
 * });
 * const engine = createEngine({ store: new MemoryStore(), runtimes: [digest.runtime] });
 * ```
 */
export function defineFunctionAutomation(spec: FunctionAutomationSpec): FunctionAutomation {
  const { handler, ...rest } = spec;
  const runtimeId = spec.runtime ?? `fn.${spec.id}`;
  const definition = defineAutomation({ ...rest, runtime: runtimeId, prompt: spec.prompt ?? spec.name ?? spec.id });
  const runtime = new FunctionRuntime(runtimeId, async (request, signal) => resultOf(await handler(request, signal)));
  return { definition, runtime };
}
