import { machinesInUse } from '../domain/machine-set.js';
import { AUTHORITY_EXTENSION, checkBinding } from '../domain/authority.js';
import { DefinitionState } from '../../machines/index.js';
import { createEntity, type EntityRecord } from '../actors/entity-transition.js';
import { appendEvent } from '../changefeed/append-event.js';
import { integrityOf } from '../contract/digest.js';
import { ContractError, isContractError, type ErrorCode } from '../contract/errors.js';
import type { CommandContext, CommandOutcome } from './context.js';
import { checkDefinitionBody, type AutomationDefinition } from '../domain/definition-body.js';
import {
  DEFINITION_KIND,
  DEFINITION_REVISION_KIND,
  revisionId,
  type DefinitionAttributes,
} from '../domain/definition-records.js';

/** The flat legacy definition used by upstream's conformance vectors (schemaVersion 1). */
export interface FlatDefinition {
  schemaVersion: 1;
  id: string;
  name: string;
  status: 'ACTIVE' | 'PAUSED' | 'DISABLED';
  rrule: string;
  timezone: string;
  misfire: 'latest';
  overlap: 'forbid';
  timeoutMinutes: number;
  runtime: string;
  prompt: string;
  cwd?: string;
  familiarId?: string;
  model?: string;
  tags?: string[];
  outputTarget?: string;
  /** A coven.automations.authority.v1 binding; kept as the definition's authority extension. */
  authority?: unknown;
  retry?: {
    maxAttempts: number;
    backoffPolicy: 'none' | 'fixed' | 'exponential';
    backoffSeconds?: number;
    retryableClasses?: Array<'transient_dispatch' | 'lease_expired' | 'runtime_unavailable'>;
  };
}

const FLAT_KEYS = new Set([
  'schemaVersion',
  'id',
  'name',
  'status',
  'rrule',
  'timezone',
  'misfire',
  'overlap',
  'timeoutMinutes',
  'runtime',
  'prompt',
  'cwd',
  'familiarId',
  'model',
  'tags',
  'outputTarget',
  'retry',
  'authority',
]);
/** Imported definitions bind this approval policy until an operator revises them with a real one. */
export const LEGACY_APPROVAL_POLICY = 'policy://coven-automata/legacy-import';

function invalid(id: string, why: string): ContractError {
  return new ContractError('VALIDATION_FAILED', `legacy definition ${id}: ${why}`, { automationId: id });
}

/**
 * Maps a flat legacy definition onto a rich v1 body in `draft`, refusing what the flat form cannot say
 * safely: unknown fields, another schema version, an unsupported output target.
 */
export function richFromFlat(flat: unknown, principalId: string, now: string): AutomationDefinition {
  const f = checkFlat(flat);
  const withIntegrity = bodyFromFlat(f, principalId, now);
  try {
    return checkDefinitionBody(withIntegrity, `payload.definitions[${f.id}]`);
  } catch (error) {
    throw inFlatTerms(error);
  }
}

/** The refusals the flat form can be checked for before it is mapped: shape, version, fields, variants. */
function checkFlat(flat: unknown): FlatDefinition {
  const f = flat as Partial<FlatDefinition> & Record<string, unknown>;
  const id = typeof f.id === 'string' ? f.id : '(no id)';
  if (typeof flat !== 'object' || flat === null || Array.isArray(flat)) throw invalid(id, 'must be an object');
  if (f.schemaVersion !== 1) {
    throw new ContractError(
      'SCHEMA_VERSION_UNSUPPORTED',
      `legacy definition ${id}: schemaVersion ${JSON.stringify(f.schemaVersion)} is not 1`,
      { automationId: id },
    );
  }
  const unknown = Object.keys(f).filter((k) => !FLAT_KEYS.has(k));
  if (unknown.length > 0) throw invalid(id, `unknown fields ${unknown.join(', ')}`);
  if (f.status !== 'ACTIVE' && f.status !== 'PAUSED' && f.status !== 'DISABLED')
    throw invalid(id, `status ${JSON.stringify(f.status)} is not ACTIVE, PAUSED or DISABLED`);
  if (f.misfire !== 'latest')
    throw new ContractError('CAPABILITY_UNSUPPORTED', `legacy definition ${id}: misfire ${JSON.stringify(f.misfire)}`, {
      variant: `misfire.${String(f.misfire)}`,
    });
  if (f.overlap !== 'forbid')
    throw new ContractError('CAPABILITY_UNSUPPORTED', `legacy definition ${id}: overlap ${JSON.stringify(f.overlap)}`, {
      variant: `overlap.${String(f.overlap)}`,
    });
  return f as FlatDefinition;
}

/** The rich v1 body a checked flat definition maps onto, in the machine's initial state, with its digest. */
function bodyFromFlat(f: FlatDefinition, principalId: string, now: string): AutomationDefinition {
  const body: Omit<AutomationDefinition, 'integrity'> = {
    schemaVersion: 'coven.automations.v1',
    automationId: f.id as string,
    revision: 1,
    lifecycleState: DefinitionState.draft,
    display: { name: f.name as string, ...(f.tags === undefined ? {} : { tags: f.tags }) },
    trigger: {
      variant: 'schedule',
      version: 1,
      schedule: { rrule: f.rrule as string, timezone: f.timezone as string },
    },
    conditions: [],
    action: {
      variant: 'familiarInvocation',
      version: 1,
      prompt: f.prompt as string,
      ...(f.cwd === undefined ? {} : { cwd: f.cwd }),
    },
    binding: {
      familiarBindingPolicy: 'exact',
      ...(f.familiarId === undefined ? {} : { familiarId: f.familiarId }),
      authority: { approvalPolicyRef: LEGACY_APPROVAL_POLICY },
    },
    runtimeRequirements: {
      runtimeId: f.runtime as string,
      capabilities: ['sessions.launch'],
      ...(f.model === undefined ? {} : { model: f.model }),
    },
    policies: {
      timeout: { perRunMinutes: f.timeoutMinutes as number },
      retry: f.retry ?? { maxAttempts: 1, backoffPolicy: 'none' },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      ...(f.outputTarget === undefined ? {} : { delivery: { outputTarget: f.outputTarget, mode: 'atomic' as const } }),
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
    provenance: { createdBy: { principalId }, createdAt: now, importedFrom: `legacy:${f.id as string}` },
    // Runtime Authority is advertised, so a flat `authority` binding is kept, checked, as the definition's extension.
    extensions: {
      'x-legacy-status': f.status,
      ...(f.authority === undefined ? {} : { [AUTHORITY_EXTENSION]: checkBinding(f.authority, f.id as string) }),
    },
  };
  return { ...body, integrity: integrityOf(body as Record<string, unknown>) } as AutomationDefinition;
}

/** Where each flat field lands in the rich body, so a refusal names the field the flat file has. */
const FLAT_FIELD_OF: ReadonlyArray<readonly [string, string]> = [
  ['/automationId', '/id'],
  ['/display/name', '/name'],
  ['/display/tags', '/tags'],
  ['/trigger/schedule/rrule', '/rrule'],
  ['/trigger/schedule/timezone', '/timezone'],
  ['/action/prompt', '/prompt'],
  ['/action/cwd', '/cwd'],
  ['/binding/familiarId', '/familiarId'],
  ['/runtimeRequirements/runtimeId', '/runtime'],
  ['/runtimeRequirements/model', '/model'],
  ['/policies/timeout/perRunMinutes', '/timeoutMinutes'],
  ['/policies/retry', '/retry'],
  ['/policies/delivery/outputTarget', '/outputTarget'],
];

/** A schema refusal of the mapped body, its problem paths rewritten to the flat definition's fields. */
function inFlatTerms(error: unknown): unknown {
  const problems = isContractError(error) ? error.details?.problems : undefined;
  if (!isContractError(error) || !Array.isArray(problems)) return error;
  const rewrite = (problem: string) => {
    const mapping = FLAT_FIELD_OF.find(([rich]) => problem.startsWith(`${rich}:`) || problem.startsWith(`${rich}/`));
    return mapping === undefined ? problem : mapping[1] + problem.slice(mapping[0].length);
  };
  return new ContractError(error.code, error.message, {
    ...error.details,
    problems: (problems as string[]).map(rewrite),
  });
}

type ImportFailure = { automationId: string; code: string; message: string; problems?: string[] };

/**
 * An import that would commit nothing but its adoption record, because every definition it could have
 * imported failed, is refused: a typed error that writes nothing, carrying the same per-definition failures
 * a partial import reports. Its code is the failures' common code, else VALIDATION_FAILED.
 */
function nothingImported(
  failures: ImportFailure[],
  skipped: Array<{ automationId: string; reason: string }>,
): ContractError {
  const codes = new Set(failures.map((f) => f.code));
  const code = codes.size === 1 ? (failures[0]!.code as ErrorCode) : 'VALIDATION_FAILED';
  const named = failures.slice(0, 10).map((f) => f.automationId);
  const more = failures.length > named.length ? `, and ${failures.length - named.length} more` : '';
  const skips = skipped.length > 0 ? `; ${skipped.length} skipped` : '';
  return new ContractError(
    code,
    `legacy import imported nothing: ${failures.length} failed (${named.join(', ')}${more})${skips}`,
    {
      failures: failures
        .slice(0, 50)
        .map((f) => ({ ...f, ...(f.problems === undefined ? {} : { problems: f.problems.slice(0, 20) }) })),
      failed: failures.length,
      skipped,
    },
  );
}

/**
 * legacy.import.v1 (source `flat-definitions`): each definition lands in `draft` with one
 * `definition.imported` event; existing ids, tombstoned ones included, are skipped; a dry run writes nothing.
 * Definitions that fail are reported beside those imported; when none is imported and some failed, the
 * command is refused (see {@link nothingImported}) and, like every refusal, stores no adoption record.
 */
export async function importLegacy(ctx: CommandContext): Promise<CommandOutcome> {
  const payload = ctx.envelope.payload as { source: string; definitions: unknown[]; dryRun?: boolean };
  const dryRun = payload.dryRun === true;
  const imported: string[] = [];
  const skipped: Array<{ automationId: string; reason: string }> = [];
  const failures: ImportFailure[] = [];
  const seen = new Set<string>();
  let lastEvent: { stream: string; sequence: number } | undefined;
  for (const flat of payload.definitions) {
    const id = typeof (flat as { id?: unknown })?.id === 'string' ? (flat as { id: string }).id : '(no id)';
    let body: AutomationDefinition;
    try {
      body = richFromFlat(flat, ctx.envelope.origin.principal.principalId, ctx.now);
    } catch (error) {
      failures.push(importFailure(id, error));
      continue;
    }
    const existing = await ctx.tx.get<EntityRecord<DefinitionAttributes>>(DEFINITION_KIND, id);
    if (existing !== undefined || seen.has(id)) {
      skipped.push({
        automationId: id,
        reason:
          existing === undefined
            ? 'duplicate id in this import'
            : 'a definition with this id exists (tombstoned ids stay reserved)',
      });
      continue;
    }
    seen.add(id);
    imported.push(id);
    if (dryRun) continue;
    lastEvent = await commitImported(ctx, id, body);
  }
  if (imported.length === 0 && failures.length > 0) throw nothingImported(failures, skipped);
  return {
    result: { source: payload.source, dryRun, imported, skipped, failures },
    ...(lastEvent === undefined ? {} : { eventRef: lastEvent }),
  };
}

/** A definition that failed to import, as the report lists it; anything but a contract error is a bug. */
function importFailure(automationId: string, error: unknown): ImportFailure {
  if (!isContractError(error)) throw error;
  const problems = error.details?.problems;
  return {
    automationId,
    code: error.code,
    message: error.message,
    ...(Array.isArray(problems) ? { problems: problems as string[] } : {}),
  };
}

/** Commits one imported definition: its definition.v1 entity, its sealed revision 1 and its event. */
async function commitImported(
  ctx: CommandContext,
  id: string,
  body: AutomationDefinition,
): Promise<{ stream: string; sequence: number }> {
  const record = await createEntity<DefinitionAttributes>(
    ctx.tx,
    machinesInUse().definition,
    DEFINITION_KIND,
    id,
    { automationId: id, revision: 1 },
    { definition: body, createdAt: ctx.now, updatedAt: ctx.now, tombstonedAt: null },
  );
  const lifecycleState = record.data.snapshot.value;
  await ctx.tx.put(DEFINITION_REVISION_KIND, revisionId(id, 1), body, { expectedVersion: null, terminal: true });
  const event = await appendEvent(ctx.tx, ctx.feed, {
    stream: { kind: 'automation', id },
    kind: 'definition.imported',
    summary: `definition ${id} imported from the flat legacy form (${lifecycleState})`,
    payload: { revision: 1, definitionDigest: body.integrity, lifecycleState, importedFrom: `legacy:${id}` },
    automationId: id,
    adoptionKey: ctx.envelope.adoptionKey,
  });
  return { stream: `automation/${id}`, sequence: event.sequence };
}
